/**
 * The store backends an end-to-end suite runs on: the embedded SQLite store
 * always, and PostgreSQL where a throwaway server can start (skipped with
 * the reason otherwise). A suite calls `storeBackends()` at its top level and
 * runs its tests once per entry: the PostgreSQL server starts before the
 * entry's first test (one per test file) and each `store()` is a fresh
 * database, so no test sees another's state.
 */
import { afterAll } from 'vitest';
import { type PostgresServer, skipPostgres, startPostgres } from './postgres.ts';

export type Backend = {
  name: 'sqlite' | 'postgres';
  /** True when this backend cannot run here (the reason was printed). */
  skip: boolean;
  /**
   * True where a suite runs only its tests that read or write the store differently: each
   * PostgreSQL test makes a database, and tests of what happens before the store (a request
   * refused at the door) or of one case among many alike add time and nothing else.
   */
  subset: boolean;
  /** Start what the backend needs (for a `beforeAll`); a no-op for SQLite. */
  start(): Promise<void>;
  /** The `store` setting of a fresh store, or undefined for the default (SQLite in the data directory). */
  store(): Promise<Record<string, unknown> | undefined>;
};

/** Room for a PostgreSQL server to start on a loaded machine (a `beforeAll` timeout). */
export const BACKEND_START_MS = 180_000;

export function storeBackends(): Backend[] {
  let server: Promise<PostgresServer> | undefined;
  afterAll(async () => {
    await (await server?.catch(() => undefined))?.stop();
  });
  const postgres = async () => {
    server ??= startPostgres();
    return server;
  };
  return [
    {
      name: 'sqlite',
      skip: false,
      subset: false,
      start: async () => {},
      store: async () => undefined,
    },
    {
      name: 'postgres',
      skip: skipPostgres(),
      subset: true,
      async start() {
        await postgres();
      },
      async store() {
        return { kind: 'postgres', url: await (await postgres()).createDatabase() };
      },
    },
  ];
}
