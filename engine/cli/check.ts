/**
 * `hookgate check`: validate the configuration and compile every condition,
 * template and preset, check that runner commands and workspaces exist and
 * can be used, then print one line per route and the audit's warnings.
 * Exit 0 (1 with --strict when there is a warning), or 2 with the offending
 * path.
 */
import { describeUrl } from '../store/backend.ts';
import { auditConfig } from '../audit.ts';
import { findConfigFile, loadConfigFile, quickstartConfig, resolveConfig } from '../config.ts';
import { type CompiledConfig, compileConfig } from '../config/compile.ts';
import type { CompiledMapping } from '../mappings.ts';
import { createLogger } from '../log.ts';
import type { Policy } from '../policy.ts';
import { agentPathProblems } from '../runtime/runner-paths.ts';
import { startTransforms } from '../sandbox/start.ts';
import { reportAudit, reportWarnings } from './audit-lines.ts';

/** Load the config named by --config / HOOKGATE_CONFIG / ./hookgate.yaml and compile it. */
export function compileSetup(
  configFlag: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
): CompiledConfig | null {
  const file = findConfigFile(configFlag, env, cwd);
  if (!file) return null;
  return compileConfig(loadConfigFile(file, env));
}

/** One line per route: path, mapping id, action, agent, conditions. */
export function describeRoutes({ loaded, policy, mappings }: CompiledConfig): string[] {
  const base = loaded.config.hooks.path;
  const lines = [
    `POST ${base}/wake  built-in  wake`,
    `POST ${base}/agent  built-in  agent  agent=${policy.defaultAgentId} (default)`,
  ];
  for (const mapping of mappings) {
    const parts = [
      `POST ${base}/${mapping.path ?? '*'}`,
      mapping.id,
      mapping.kind,
      ...(mapping.kind === 'agent' ? [`agent=${agentOf(mapping, policy)}`] : []),
      ...(mapping.source !== undefined ? [`source=${mapping.source}`] : []),
      ...(mapping.whenRule !== undefined ? [`when=${JSON.stringify(mapping.whenRule)}`] : []),
      ...(mapping.forEach !== undefined ? [`forEach=${mapping.forEach}`] : []),
      ...(mapping.transform ? [`transform=${mapping.transform.file}`] : []),
      ...(mapping.auth ? [`auth=${mapping.auth.scheme}`] : []),
      ...(mapping.provenance.wrap ? [] : ['UNSAFE: not wrapped']),
      `(${mapping.at})`,
    ];
    lines.push(parts.join('  '));
  }
  return lines;
}

function agentOf(mapping: CompiledMapping, policy: Policy): string {
  const agent = mapping.fields.agentId;
  if (agent === undefined) return `${policy.defaultAgentId} (default)`;
  return typeof agent === 'string' ? agent : '(templated)';
}

/** Run `check`; returns the exit status (config errors are thrown as ConfigError). */
export async function check(
  configFlag: string | undefined,
  out: (line: string) => void,
  options: { strict?: boolean } = {},
): Promise<number> {
  const setup = compileSetup(configFlag, process.env, process.cwd());
  if (!setup) {
    out(
      'No config file (--config, HOOKGATE_CONFIG or ./hookgate.yaml): serve would run the quickstart.',
    );
    return checkQuickstart(process.env, process.cwd(), out, options.strict === true);
  }
  // Runner commands and workspaces as the runtime will start them (serve only warns).
  const problems = [
    ...agentPathProblems(setup.loaded.config, setup.loaded.baseDir, process.env),
    ...setup.mailProblems,
  ];
  for (const problem of problems) {
    process.stderr.write(`hookgate: config error: ${problem.path}: ${problem.message}\n`);
  }
  if (problems.length > 0) return 2;
  // Load the transform modules too: a module that does not load fails the check.
  const transforms = await startTransforms(
    setup.loaded.config,
    setup.mappings,
    createLogger('silent'),
  );
  await transforms?.close();
  out(`Config OK: ${setup.loaded.file}`);
  if (!setup.loaded.config.hooks.enabled)
    out('Note: hooks.enabled is false; every hook answers 404.');
  for (const line of describeRoutes(setup)) out(`  ${line}`);
  const gmail = setup.loaded.config.hooks.gmail;
  if (setup.loaded.config.hooks.enabled && gmail.account) {
    const { bind, port, path } = gmail.serve;
    out(
      `  mail flow: ${gmail.account}, pushes on http://${bind}:${port}${path} (${gmail.push.mode})`,
    );
  }
  const store = setup.loaded.config.store;
  // Not connected to: check validates the file; the database is reached at serve.
  out(
    store.kind === 'postgres'
      ? `  store: PostgreSQL at ${describeUrl(store.url as string)} (shared by every instance using it)`
      : `  store: SQLite in ${setup.loaded.dataDir}`,
  );
  // Advice on valid settings (spec 5.7): exit 0 unless --strict.
  return reportAudit(setup.loaded.config, out, options.strict === true);
}

/**
 * The quickstart's hook token when HOOKGATE_TOKEN gives it, held to the rules of a config
 * file's `hooks.token`: validated as serve would (a ConfigError when it would refuse it), and
 * audited, its warning named HOOKGATE_TOKEN. A generated token needs neither.
 */
function checkQuickstart(
  env: NodeJS.ProcessEnv,
  cwd: string,
  out: (line: string) => void,
  strict: boolean,
): number {
  const quick = quickstartConfig(env);
  if (quick.generatedToken) return 0;
  const { config } = resolveConfig(quick.raw, { baseDir: cwd, env: null });
  const warnings = auditConfig(config).map((warning) =>
    warning.setting === 'hooks.token' ? { ...warning, setting: 'HOOKGATE_TOKEN' } : warning,
  );
  return reportWarnings(warnings, out, strict);
}
