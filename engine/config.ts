/**
 * Loading the configuration: read YAML or JSON, substitute `${VAR}` from the
 * environment, validate against schemas/config.ts (defaults filled in),
 * check the cross-field rules, normalise, and deep-freeze. Any problem is a
 * ConfigError naming the offending path; the service never starts half-configured.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { type Config, configSchema } from '../schemas/config.ts';
import { ConfigError, readConfigDocument, shieldReferences } from './config-document.ts';
import { checkConfigRules, normaliseHooksPath } from './config-rules.ts';
import { CREDENTIAL_SETTING } from './config/credential-settings.ts';
import { findIllFormedText, illFormedMessage } from './config/well-formed-text.ts';
import { transformsRoot as transformsRootFor } from './sandbox/paths.ts';
import { compileValidator, joinPath } from './validation.ts';

export { ConfigError, readConfigDocument, shieldReferences };

/** A validated configuration and where relative paths in it are resolved from. */
export type LoadedConfig = {
  config: Readonly<Config>;
  /** Directory of the config file (the working directory for a quickstart). */
  baseDir: string;
  /** Absolute path of the config file, or null for the quickstart. */
  file: string | null;
  /** Absolute data directory. */
  dataDir: string;
  /** The transforms root: hooks/transforms beside the config file (quickstart: in the data dir). */
  transformsRoot: string;
};

const validateConfig = compileValidator<Config>(configSchema, {
  useDefaults: true,
  unknownLabel: 'unknown setting',
});

/** Read and validate a config file. */
export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  return loadConfigDocument(readConfigDocument(file), env);
}

/** Validate a config file's parsed document (paths in it resolve beside the file). */
export function loadConfigDocument(
  { absolute, raw }: { absolute: string; raw: unknown },
  env: NodeJS.ProcessEnv = process.env,
): LoadedConfig {
  return resolveConfig(raw, { baseDir: path.dirname(absolute), file: absolute, env });
}

/** Validate an in-memory configuration object (file contents after parsing). */
export function resolveConfig(
  raw: unknown,
  options: {
    baseDir: string;
    file?: string | null;
    /** Variables for `${VAR}`; null = no substitution (values are literal). */
    env?: NodeJS.ProcessEnv | null;
    dataDir?: string;
  },
): LoadedConfig {
  const env = options.env === undefined ? process.env : options.env;
  const substituted =
    env === null ? structuredClone(raw) : substituteEnv(structuredClone(raw), env, '');
  // Before the schema: a lone surrogate is refused as such, in any setting, also one whose
  // pattern would have let it through (a password, a prompt).
  const illFormed = findIllFormedText(substituted);
  if (illFormed) throw new ConfigError(illFormed.path, illFormedMessage(illFormed));
  const result = validateConfig(substituted);
  if (!result.ok) throw new ConfigError(result.field, result.message);
  const config = result.value;
  const problem = checkConfigRules(config);
  if (problem) throw new ConfigError(problem.path, problem.message);
  config.hooks.path = normaliseHooksPath(config.hooks.path) as string;
  const dataDir = options.dataDir
    ? path.resolve(options.dataDir)
    : path.resolve(options.baseDir, config.runtime.dataDir);
  const transformsRoot = transformsRootFor(options.file ? options.baseDir : dataDir);
  return {
    config: deepFreeze(config),
    baseDir: options.baseDir,
    file: options.file ?? null,
    dataDir,
    transformsRoot,
  };
}

/** Where the config comes from: --config, HOOKGATE_CONFIG, or ./hookgate.yaml when present. */
export function findConfigFile(
  flag: string | undefined,
  env: NodeJS.ProcessEnv,
  cwd: string,
): string | null {
  if (flag) return flag;
  if (env['HOOKGATE_CONFIG']) return env['HOOKGATE_CONFIG'];
  const local = path.join(cwd, 'hookgate.yaml');
  return existsSync(local) ? local : null;
}

/** The quickstart configuration used when no config file exists. */
export function quickstartConfig(env: NodeJS.ProcessEnv): { raw: object; generatedToken: boolean } {
  const token = env['HOOKGATE_TOKEN'] || randomBytes(24).toString('base64url');
  return {
    raw: {
      server: { host: '127.0.0.1', port: 8787 },
      hooks: { enabled: true, token, path: '/hooks' },
      runtime: { dataDir: './data' },
    },
    generatedToken: !env['HOOKGATE_TOKEN'],
  };
}

const VAR = /\$\$\{|\$\{([^}]*)\}|hookgate\.env\.([A-Za-z_][A-Za-z0-9_]*)\.placeholder/g;

/**
 * Most values a config document's aliases may repeat: the parser returns an alias as the value
 * it names, shared, and copying it here expanded 400 KB of anchors used 99 times into 20 million
 * values on the main thread (seconds of every request waiting). Values written out, however
 * many, are not counted: only those walked again because an alias named them.
 */
const MAX_REPEATED_VALUES = 100_000;

type Walk = { seen: Set<object>; left: number };

/** Substitute `${VAR}` in a value of a config document; `at` names it in errors. */
export function substituteEnv(
  value: unknown,
  env: NodeJS.ProcessEnv,
  at: string,
  walk: Walk = { seen: new Set(), left: MAX_REPEATED_VALUES },
  repeated = false,
): unknown {
  if (repeated && --walk.left < 0) {
    throw new ConfigError(
      '',
      `YAML aliases in the document repeat more than ${MAX_REPEATED_VALUES} values`,
    );
  }
  if (typeof value === 'string') {
    return value.replace(VAR, (match, braced: string | undefined, shielded: string | undefined) => {
      if (match === '$${') return '${';
      const name = braced ?? shielded;
      if (!name || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        // The reference is not echoed: in a literal secret, `${` is the secret's own text.
        throw new ConfigError(
          at,
          'an invalid ${...} reference (a name of letters, digits and _, not starting with a digit; write $${ for a literal ${)',
        );
      }
      const found = env[name];
      if (found === undefined) {
        // Named, except inside a longer value of a credential's setting: there the "name" may be
        // a literal secret's own text that happens to hold `${WORD}`.
        throw new ConfigError(
          at,
          match !== value && CREDENTIAL_SETTING.test(at)
            ? 'an environment variable it refers to is not set (write $${ for a literal ${)'
            : `environment variable ${name} is not set`,
        );
      }
      return found;
    });
  }
  if (value === null || typeof value !== 'object') return value;
  // An object walked before is an alias's repeat: it and all it holds are counted.
  const again = repeated || walk.seen.has(value);
  walk.seen.add(value);
  if (again && !repeated && --walk.left < 0) {
    throw new ConfigError(
      '',
      `YAML aliases in the document repeat more than ${MAX_REPEATED_VALUES} values`,
    );
  }
  if (Array.isArray(value))
    return value.map((item, i) => substituteEnv(item, env, joinPath(at, String(i)), walk, again));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    // defineProperty: a "__proto__" key stays a plain (refused) key, never a prototype.
    Object.defineProperty(out, key, {
      value: substituteEnv(item, env, joinPath(at, key), walk, again),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}
