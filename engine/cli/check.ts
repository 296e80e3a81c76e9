/**
 * `hookgate check`: validate the configuration and compile every condition,
 * template and preset, check that runner commands and workspaces exist and
 * can be used, then print one line per route. Exit 0, or 2 with the
 * offending path.
 */
import { findConfigFile, type LoadedConfig, loadConfigFile } from '../config.ts';
import { type CompiledMapping, compileMappings } from '../mappings.ts';
import { checkMailFlow, type MailFlowProblem } from '../gmail/flow.ts';
import { compileRoutes, routeContext } from '../ingress/routes.ts';
import { createLogger } from '../log.ts';
import { checkDefaultRoute } from '../hookgate.ts';
import { type Policy, policyFromConfig } from '../policy.ts';
import { agentPathProblems } from '../runtime/runner-paths.ts';
import { startTransforms } from '../sandbox/start.ts';
import { reportAudit } from './audit-lines.ts';

export type CompiledSetup = {
  loaded: LoadedConfig;
  policy: Policy;
  mappings: CompiledMapping[];
  /** What stops the mail flow without stopping the server (serve warns, check refuses). */
  mailProblems: MailFlowProblem[];
};

/** Load the config named by --config / HOOKGATE_CONFIG / ./hookgate.yaml and compile its mappings. */
export function compileSetup(
  configFlag: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
): CompiledSetup | null {
  const file = findConfigFile(configFlag, env, cwd);
  if (!file) return null;
  const loaded = loadConfigFile(file, env);
  const policy = policyFromConfig(loaded.config);
  checkDefaultRoute(loaded.config, policy);
  const mappings = compileMappings(loaded.config, policy, loaded.transformsRoot);
  // The routes too: an auth block that cannot work stops `check` as it would stop the server.
  const routes = compileRoutes(loaded.config, mappings, routeContext(loaded.config, policy));
  // The mail flow's settings too, as the server would check them at start.
  const mailProblems =
    loaded.config.hooks.enabled && loaded.config.hooks.gmail.account
      ? checkMailFlow(loaded, routes).problems
      : [];
  return { loaded, policy, mappings, mailProblems };
}

/** One line per route: path, mapping id, action, agent, conditions. */
export function describeRoutes({ loaded, policy, mappings }: CompiledSetup): string[] {
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
    return 0;
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
  // Advice on valid settings (spec 5.7): exit 0 unless --strict.
  return reportAudit(setup.loaded.config, out, options.strict === true);
}
