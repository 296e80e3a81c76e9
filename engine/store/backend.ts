/**
 * The store backend a configuration names, opened as one unit: where
 * accepted actions go, the runtime's store, and what closes them. SQLite
 * (the default) lives in the data directory and belongs to one process;
 * PostgreSQL is shared by every instance that names the same database, over
 * one connection pool per instance.
 */
import { atAfterHost } from './postgres-url.ts';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import type { Config } from '../../schemas/config.ts';
import type { ActionStore, StoredAction } from '../queue/action-store.ts';
import {
  type AuthFailureLimiter,
  createMemoryLimiter,
  type LimiterOptions,
  type RateLimitSettings,
} from '../rate-limit.ts';
import type { RuntimeStore } from '../runtime/runtime-store.ts';
import { openPostgresStore } from './postgres/action-store.ts';
import {
  createPostgresLimiter,
  STATEMENT_DEADLINE_MS,
  serverTimeoutMs,
} from './postgres/limiter.ts';
import { closePool, openPool } from './postgres/pool.ts';
import { PostgresRuntimeStore } from './postgres/runtime-store.ts';
import {
  migratePostgres,
  POSTGRES_SCHEMA_VERSION,
  postgresSchemaVersion,
} from './postgres/schema.ts';
import { openSqliteStore, readActions } from './sqlite/action-store.ts';
import { SqliteRuntimeStore } from './sqlite/runtime-store.ts';
import { refuseOtherSchemaVersion, STORE_FILE } from './sqlite/schema.ts';

export type StoreSettings = Config['store'];

export type Backend = {
  actions: ActionStore;
  /** The runtime's store over the same backend (the caller closes it before the backend). */
  openRuntime(): RuntimeStore;
  /**
   * The failed-auth limiter over the same backend: in memory beside SQLite (one process),
   * shared by the instances on PostgreSQL. Closed by the backend's close at the latest.
   */
  openLimiter(settings: RateLimitSettings, options?: LimiterOptions): AuthFailureLimiter;
  /** Where the store is, fit for a log line or a message (never a password). */
  describe: string;
  /** Commit what is pending and release everything. */
  close(): Promise<void>;
};

export type BackendOptions = {
  dataDir: string;
  store: StoreSettings;
  commitDelayMs: number;
  onWarning?: (message: string) => void;
  onError?: (err: Error) => void;
};

/** Open the configured backend (the PostgreSQL schema is created or migrated first). */
export async function openBackend(options: BackendOptions): Promise<Backend> {
  const { store } = options;
  if (store.kind === 'postgres') return openPostgres(store, options);
  const actions = await openSqliteStore(options.dataDir, {
    commitDelayMs: options.commitDelayMs,
    ...(options.onWarning && { onWarning: options.onWarning }),
  });
  return {
    actions,
    openRuntime: () => SqliteRuntimeStore.open(options.dataDir),
    openLimiter: createMemoryLimiter,
    describe: options.dataDir,
    close: () => actions.close(),
  };
}

/**
 * Of an instance's `poolSize` connections, the one the failed-auth limiter counts on: a flood
 * of bad tokens queues its counts there, never ahead of acceptance, claims, the lead's renewal
 * or the limiter's own reads of the locks on the main pool (sharing it, such a flood could hold
 * the lead's renewal past its lease and move the lead).
 */
const LIMITER_CONNECTIONS = 1;

async function openPostgres(store: StoreSettings, options: BackendOptions): Promise<Backend> {
  const pool = openPool({
    url: store.url as string,
    poolSize: store.poolSize - LIMITER_CONNECTIONS,
    ...(options.onError && { onError: options.onError }),
  });
  try {
    await migratePostgres(pool);
    return await postgresBackend(pool, store, options.onError);
  } catch (err) {
    await closePool(pool);
    throw cannotOpen(store, err);
  }
}

/** The stores over a pool whose schema is current. */
async function postgresBackend(
  pool: pg.Pool,
  store: StoreSettings,
  onError?: (err: Error) => void,
): Promise<Backend> {
  const actions = await openPostgresStore(pool, { migrate: false });
  // Unique per process: leases name the instance that holds them.
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const limiters: AuthFailureLimiter[] = [];
  // Opened with the first limiter (the command-line views never open one).
  let limiterPool: pg.Pool | undefined;
  return {
    actions,
    openRuntime: () =>
      new PostgresRuntimeStore(pool, { owner, leaseMs: store.leaseSeconds * 1000 }),
    openLimiter(settings, options = {}) {
      limiterPool ??= openPool({
        url: store.url as string,
        poolSize: LIMITER_CONNECTIONS,
        // Ended on the server before this side gives up on them: a count or reset held up
        // (a lock on the table) does not run on after its failure was counted in memory.
        statementTimeoutMs: serverTimeoutMs(STATEMENT_DEADLINE_MS),
        ...(onError && { onError }),
      });
      const limiter = createPostgresLimiter(pool, settings, {
        ...options,
        countsPool: limiterPool,
      });
      limiters.push(limiter);
      return limiter;
    },
    describe: describeUrl(store.url as string),
    async close() {
      // Their refresh stops before the pool ends (closing a limiter twice is harmless).
      await Promise.all(limiters.splice(0).map((limiter) => limiter.close()));
      await actions.close();
      await Promise.all([closePool(pool), limiterPool && closePool(limiterPool)]);
    },
  };
}

function cannotOpen(store: StoreSettings, err: unknown): Error {
  // Named by host and database only: the URL carries the password.
  return new Error(
    `cannot open the store at ${describeUrl(store.url as string)}: ${(err as Error).message}`,
    { cause: err },
  );
}

/** What the command-line views read and change: runs, records and accepted actions. */
export type StoreViews = {
  runtime: RuntimeStore;
  listActions(limit: number): Promise<StoredAction[]>;
  describe: string;
  close(): Promise<void>;
};

/**
 * For the command-line views: the store when there is one to read, else the sentence saying
 * there is none yet. Neither store is created or migrated here: one at another schema version
 * is refused.
 */
export async function openStoreViews(
  dataDir: string,
  store: StoreSettings,
): Promise<StoreViews | string> {
  if (store.kind === 'sqlite') {
    if (!existsSync(path.join(dataDir, STORE_FILE))) return `No store in ${dataDir} yet.`;
    refuseOtherSchemaVersion(dataDir);
    const runtime = SqliteRuntimeStore.open(dataDir, { migrate: false });
    return {
      runtime,
      listActions: async (limit) => readActions(dataDir, limit),
      describe: dataDir,
      close: () => runtime.close(),
    };
  }
  const backend = await existingPostgres(store);
  if (typeof backend === 'string') return backend;
  const runtime = backend.openRuntime();
  return {
    runtime,
    listActions: (limit) => backend.actions.listActions({ limit }),
    describe: backend.describe,
    async close() {
      await runtime.close();
      await backend.close();
    },
  };
}

/**
 * The views never change the schema: a database hookgate has not set up has no store yet, and
 * one at another version is left to a server of that version (running servers may use it).
 */
async function existingPostgres(store: StoreSettings): Promise<Backend | string> {
  const pool = openPool({ url: store.url as string, poolSize: 2 });
  const where = describeUrl(store.url as string);
  let version: number | undefined;
  try {
    version = await postgresSchemaVersion(pool);
  } catch (err) {
    await closePool(pool);
    throw cannotOpen(store, err);
  }
  if (version === POSTGRES_SCHEMA_VERSION) return postgresBackend(pool, store);
  await closePool(pool);
  if (version === undefined) return `No store at ${where} yet.`;
  throw new Error(
    `the store at ${where} is at schema version ${version}; this hookgate reads version ${POSTGRES_SCHEMA_VERSION} (use the hookgate that serves it)`,
  );
}

/**
 * A PostgreSQL URL without its password (or anything else secret): host, port and database; for
 * one whose password ends its host early (postgres-url.ts), nothing of it.
 */
export function describeUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'postgres (the URL does not parse)';
  }
  if (atAfterHost(url))
    return 'postgres (not shown: an @ after its host, where a password with an unencoded /, ? or # would put its rest)';
  return `postgres://${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
}
