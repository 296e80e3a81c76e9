/**
 * Where the store views (`actions`, `runs`, `events`, `heartbeats`, `retry`,
 * `heartbeat now`, `reload`) find the store and the main session key. They
 * read only `runtime.dataDir`, `store` and `session.mainKey` from the config
 * and substitute `${VAR}` there alone: reading the store never needs the
 * other secrets the config refers to. With `--data-dir` no config is read
 * unless `--config` is given too.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { configSchema } from '../../schemas/config.ts';
import type { StoreSettings } from '../store/backend.ts';
import { ConfigError, findConfigFile, readConfigDocument, substituteEnv } from '../config.ts';
import { UsageError } from './usage-error.ts';

export type StoreFlags = { dataDir?: string; config?: string };
export type StoreLocation = { dataDir: string; mainKey: string; store: StoreSettings };

const STORE_DEFAULTS = configSchema.properties.store.properties;
const SQLITE: StoreSettings = {
  kind: 'sqlite',
  poolSize: STORE_DEFAULTS.poolSize.default,
  leaseSeconds: STORE_DEFAULTS.leaseSeconds.default,
  retentionDays: STORE_DEFAULTS.retentionDays.default,
};

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
    const store = fromFile?.store ?? SQLITE;
    const dataDir = path.resolve(cwd, flags.dataDir);
    if (store.kind === 'sqlite') requireDirectory(dataDir);
    return { dataDir, mainKey: fromFile?.mainKey ?? DEFAULT_MAIN_KEY, store };
  }
  return (
    fromFile ?? {
      dataDir: path.resolve(cwd, DEFAULT_DATA_DIR),
      mainKey: DEFAULT_MAIN_KEY,
      store: SQLITE,
    }
  );
}

/**
 * A directory named on the command line must be there: a mistyped path read as "no store
 * yet" (exit 0) looked like an empty store. The default and a config's directory may be
 * missing before the first `serve`, which creates them.
 */
function requireDirectory(dataDir: string): void {
  const found = statSync(dataDir, { throwIfNoEntry: false });
  if (found === undefined) throw new UsageError(`--data-dir ${dataDir}: no such directory`);
  if (!found.isDirectory()) throw new UsageError(`--data-dir ${dataDir}: not a directory`);
}

function readLocation(file: string, env: NodeJS.ProcessEnv): StoreLocation {
  const { absolute, raw } = readConfigDocument(file);
  const dataDir = setting(raw, 'runtime', 'dataDir', env) ?? DEFAULT_DATA_DIR;
  return {
    dataDir: path.resolve(path.dirname(absolute), dataDir),
    mainKey: setting(raw, 'session', 'mainKey', env) ?? DEFAULT_MAIN_KEY,
    store: storeSettings(raw, env),
  };
}

/** The `store` section as the views need it: the kind and, for PostgreSQL, the URL. */
function storeSettings(raw: unknown, env: NodeJS.ProcessEnv): StoreSettings {
  const kind = setting(raw, 'store', 'kind', env) ?? 'sqlite';
  if (kind === 'sqlite') return SQLITE;
  if (kind !== 'postgres') throw new ConfigError('store.kind', 'must be sqlite or postgres');
  const url = setting(raw, 'store', 'url', env);
  if (url === undefined) throw new ConfigError('store.url', 'required with store.kind postgres');
  const leaseSeconds = Number(
    ownValue(ownValue(raw, 'store'), 'leaseSeconds') ?? STORE_DEFAULTS.leaseSeconds.default,
  );
  return { ...SQLITE, kind: 'postgres', url, leaseSeconds };
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
