/**
 * Leases of the PostgreSQL runtime store: an instance keeps leased only the
 * runs it is running. A run whose end could not be recorded (the database
 * was down at that moment) must not stay leased by its instance's renewals
 * while that instance is busy with other work: it would hold its session
 * back for as long as the instance has anything to do.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { PostgresRuntimeStore } from '../engine/store/postgres/runtime-store.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';

const skip = skipPostgres();

describe.skipIf(skip)('PostgreSQL run leases', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('renews the runs still running here, and lets one it no longer runs expire', async () => {
    const pool = openPool({ url: await server.createDatabase(), poolSize: 2 });
    try {
      await migratePostgres(pool);
      for (const session of ['hook:a', 'hook:b']) {
        await pool.query(
          `INSERT INTO actions (id, kind, hook, session_key, received_at, action)
           VALUES ($1, 'agent', 'agent', $2, now(), $3)`,
          [`run-${session}`, session, JSON.stringify({ kind: 'agent', sessionKey: session })],
        );
      }
      const store = new PostgresRuntimeStore(pool, { owner: 'instance-1', leaseMs: 60_000 });
      const [first, second] = await store.claimHeads(2, new Set());
      expect([first?.id, second?.id].sort()).toEqual(['run-hook:a', 'run-hook:b']);
      // Both leases about to expire; then only the first is still running here.
      await pool.query("UPDATE actions SET lease_until = now() + interval '1 second'");
      await store.renewLeases(first ? [first] : []);
      const { rows } = await pool.query<{ id: string; left: number }>(
        `SELECT id, extract(epoch FROM lease_until - now())::float8 AS left FROM actions`,
      );
      const left = new Map(rows.map((row) => [row.id, row.left]));
      expect(left.get(first?.id ?? '')).toBeGreaterThan(30);
      expect(left.get(second?.id ?? '')).toBeLessThan(2);
    } finally {
      await closePool(pool);
    }
  }, 180_000);
});
