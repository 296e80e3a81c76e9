/**
 * Where the store views (`actions`, `runs`, `events`, `heartbeats`, `retry`,
 * `heartbeat now`) find the store and the main session key. They read only
 * `runtime.dataDir` and `session.mainKey` from the config and substitute
 * `${VAR}` there alone: reading the store never needs the secrets the rest
 * of the config refers to. With `--data-dir` no config is read unless
 * `--config` is given too.
 */
import path from 'node:path';
import { configSchema } from '../../schemas/config.ts';
import { ConfigError, findConfigFile, readConfigDocument, substituteEnv } from '../config.ts';

export type StoreFlags = { dataDir?: string; config?: string };
export type StoreLocation = { dataDir: string; mainKey: string };

const DEFAULT_DATA_DIR = configSchema.properties.runtime.properties.dataDir.default;
const DEFAULT_MAIN_KEY = configSchema.properties.session.properties.mainKey.default;

/** The store's directory and the main session key for a store command. */
export function storeLocation(
  flags: StoreFlags,
  env: NodeJS.ProcessEnv,
  cwd: string,
): StoreLocation {
  const file = flags.dataDir ? flags.config : findConfigFile(flags.config, env, cwd);
  const fromFile = file ? readLocation(path.resolve(cwd, file), env) : undefined;
  if (flags.dataDir) {
    return {
      dataDir: path.resolve(cwd, flags.dataDir),
      mainKey: fromFile?.mainKey ?? DEFAULT_MAIN_KEY,
    };
  }
  return fromFile ?? { dataDir: path.resolve(cwd, DEFAULT_DATA_DIR), mainKey: DEFAULT_MAIN_KEY };
}

function readLocation(file: string, env: NodeJS.ProcessEnv): StoreLocation {
  const { absolute, raw } = readConfigDocument(file);
  const dataDir = setting(raw, 'runtime', 'dataDir', env) ?? DEFAULT_DATA_DIR;
  return {
    dataDir: path.resolve(path.dirname(absolute), dataDir),
    mainKey: setting(raw, 'session', 'mainKey', env) ?? DEFAULT_MAIN_KEY,
  };
}

/** One string setting `<section>.<key>`, `${VAR}` substituted; undefined when absent. */
function setting(
  raw: unknown,
  section: string,
  key: string,
  env: NodeJS.ProcessEnv,
): string | undefined {
  const at = `${section}.${key}`;
  const parent = ownValue(raw, section);
  const value = ownValue(parent, key);
  if (value === undefined) return undefined;
  const resolved = substituteEnv(value, env, at);
  if (typeof resolved !== 'string' || resolved === '') {
    throw new ConfigError(at, 'must be a non-empty string');
  }
  return resolved;
}

function ownValue(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  return Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
}
