/**
 * The PostgreSQL action store against the shared store contract, on a
 * throwaway server of its own (a fresh database per test), plus what only a
 * shared store must do: migrate safely when instances start together, keep
 * one key to one request across instances, and lose no acknowledged append
 * when the database server itself is killed.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionStore, NewIdempotencyRecord } from '../engine/queue/action-store.ts';
import { openPostgresStore } from '../engine/store/postgres/action-store.ts';
import { POSTGRES_SCHEMA_VERSION } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { describeActionStore, sampleAction } from './store-contract.ts';

const skip = skipPostgres();

function keyRecord(key: string, actionId: string): NewIdempotencyRecord {
  return {
    key,
    fingerprint: `fp-${key}`,
    actionId,
    response: `{"id":"${actionId}"}`,
    createdAtMs: 1000,
    notBeforeMs: 0,
  };
}

async function queryRows<T extends pg.QueryResultRow>(
  url: string,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(skip)('PostgreSQL store', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await server?.stop();
  });

  describeActionStore('postgres', () => {
    let url: string | undefined;
    return {
      // One database per test; reopening within the test reuses it.
      open: async () => {
        url ??= await server.createDatabase();
        return openPostgresStore({ url, poolSize: 4 });
      },
      cleanup: () => undefined,
    };
  });

  it('splits a pile of waiting requests into bounded statements, storing and answering each', async () => {
    const url = await server.createDatabase();
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    // Count the accept statements the store sends (each is one batch).
    let statements = 0;
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args) => {
        if (typeof args[0] === 'string' && args[0].includes('WITH keys AS')) statements++;
        return query(...args);
      };
    });
    const store = await openPostgresStore(pool);
    try {
      // 1,200 requests of ~20 KB arrive in one turn: far past one statement's bounds.
      const big = 'x'.repeat(20_000);
      const actions = Array.from({ length: 1200 }, (_, i) => sampleAction(`${i} ${big}`));
      const outcomes = await Promise.all(
        actions.map((action) => store.appendOrGet({ actions: [action] })),
      );
      expect(outcomes.every((outcome) => outcome.stored)).toBe(true);
      expect(await store.listActions({ limit: 2000 })).toHaveLength(1200);
      // 24 MB and 1,200 requests: at least three statements of at most 8 MB / 500 requests.
      expect(statements).toBeGreaterThanOrEqual(3);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  describe('shared by several instances', () => {
    const stores: ActionStore[] = [];
    const open = async (url: string) => {
      const store = await openPostgresStore({ url, poolSize: 4 });
      stores.push(store);
      return store;
    };
    afterAll(async () => {
      for (const store of stores.splice(0)) await store.close();
    });

    it('migrates the schema once when three instances start at once', async () => {
      const url = await server.createDatabase();
      await Promise.all([open(url), open(url), open(url)]);
      const versions = await queryRows<{ version: number }>(
        url,
        'SELECT version FROM schema_version',
      );
      expect(versions).toEqual([{ version: POSTGRES_SCHEMA_VERSION }]);
      const tables = await queryRows<{ name: string }>(
        url,
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
      );
      expect(tables.map((t) => t.name)).toEqual(
        expect.arrayContaining(['actions', 'idempotency_keys', 'auth_failures', 'leases']),
      );
    });

    it('refuses a database a newer hookgate migrated, as a newer SQLite store is refused', async () => {
      const url = await server.createDatabase();
      await (await open(url)).close();
      await queryRows(url, 'UPDATE schema_version SET version = version + 1');
      await expect(openPostgresStore({ url, poolSize: 2 })).rejects.toThrow(
        `the PostgreSQL database is at schema version ${POSTGRES_SCHEMA_VERSION + 1}; this hookgate reads version ${POSTGRES_SCHEMA_VERSION} (use the hookgate that serves it)`,
      );
    });

    it('starts with a role that may read and write but no longer create tables', async () => {
      const url = await server.createDatabase();
      await (await open(url)).close();
      const role = `hookgate_rw_${Date.now()}`;
      const setup = [
        `CREATE ROLE ${role} LOGIN`,
        `REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
        `GRANT USAGE ON SCHEMA public TO ${role}`,
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      ];
      for (const sql of setup) await queryRows(url, sql);
      const limited = new URL(url);
      limited.username = role;
      const store = await open(limited.toString());
      const action = sampleAction('as the limited role');
      expect(await store.appendOrGet({ actions: [action] })).toEqual({ stored: true });
    });

    it('gives a key to exactly one of two instances racing for it', async () => {
      const url = await server.createDatabase();
      const [a, b] = await Promise.all([open(url), open(url)]);
      for (let round = 0; round < 30; round++) {
        const [first, second] = [sampleAction(`a${round}`), sampleAction(`b${round}`)];
        const outcomes = await Promise.all([
          a!.appendOrGet({ actions: [first], idempotency: [keyRecord(`k${round}`, first.id)] }),
          b!.appendOrGet({ actions: [second], idempotency: [keyRecord(`k${round}`, second.id)] }),
        ]);
        expect(outcomes.filter((o) => o.stored)).toHaveLength(1);
        const loser = outcomes.find((o) => !o.stored);
        const winnerId = outcomes[0]?.stored ? first.id : second.id;
        expect(loser).toEqual({
          stored: false,
          previous: expect.objectContaining({ actionId: winnerId }),
        });
      }
      expect(await a!.listActions({ limit: 100 })).toHaveLength(30);
    });

    it('keeps nothing of the instance that lost one of several keys', async () => {
      const url = await server.createDatabase();
      const [a, b] = await Promise.all([open(url), open(url)]);
      for (let round = 0; round < 20; round++) {
        const [first, second] = [sampleAction(), sampleAction()];
        // They share one key; each has one of its own.
        const outcomes = await Promise.all([
          a!.appendOrGet({
            actions: [first],
            idempotency: [keyRecord(`a${round}`, first.id), keyRecord(`s${round}`, first.id)],
          }),
          b!.appendOrGet({
            actions: [second],
            idempotency: [keyRecord(`s${round}`, second.id), keyRecord(`b${round}`, second.id)],
          }),
        ]);
        expect(outcomes.filter((o) => o.stored)).toHaveLength(1);
        const loserOwnKey = outcomes[0]?.stored ? `b${round}` : `a${round}`;
        expect(await a!.findIdempotency(loserOwnKey, 0)).toBeUndefined();
      }
      expect(await a!.listActions({ limit: 100 })).toHaveLength(20);
    });
  });

  it('stores an action whose text holds a NUL character, as SQLite does', async () => {
    const url = await server.createDatabase();
    const store = await openPostgresStore({ url, poolSize: 2 });
    try {
      const action = sampleAction('before\u0000after');
      expect(await store.appendOrGet({ actions: [action] })).toEqual({ stored: true });
      expect((await store.listActions({ limit: 1 }))[0]?.action).toEqual(action);
    } finally {
      await store.close();
    }
  });

  it('loses no acknowledged append when the database server crashes', async () => {
    const url = await server.createDatabase();
    const store = await openPostgresStore({ url, poolSize: 4 });
    const acked: string[] = [];
    let crashed = false;
    // 32 producers append; the server and all its backends die right after the 300th answer,
    // while later batches are in flight.
    const producers = Array.from({ length: 32 }, async () => {
      while (!crashed) {
        const action = sampleAction();
        try {
          await store.appendOrGet({ actions: [action] });
        } catch {
          continue;
        }
        acked.push(action.id);
        if (acked.length === 300) {
          server.crash();
          crashed = true;
        }
      }
    });
    await Promise.all(producers);
    await store.close();
    await server.restart();
    const rows = await queryRows<{ id: string }>(url, 'SELECT id FROM actions WHERE id = ANY($1)', [
      acked,
    ]);
    expect(rows).toHaveLength(acked.length);
  });
});
