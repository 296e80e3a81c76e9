/**
 * Attack: starve the leading instance's connection pool (a flood holds every
 * connection) just as its heartbeat starts. Its lead checks wait in the same
 * pool, so the lead lapses and another instance takes it and runs the
 * heartbeat over the pending events. When the pool frees up, the starved
 * instance's heartbeat must not go on to run its turn over those same events
 * beside the new leader's: the agent would see each event twice.
 */
import type pg from 'pg';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { leadingHeartbeat, MAIN, notingRunner } from './helpers/leading-heartbeat.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const LEASE_MS = 2_000;

/** One instance whose pool holds `poolSize` connections. */
function instance(url: string, owner: string, poolSize: number, runner: Runner) {
  return leadingHeartbeat({ url, owner, leaseMs: LEASE_MS, poolSize, runner });
}

describe.skipIf(skip)('attack: the leader starved of connections as its heartbeat starts', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  it('runs no turn over the events once another instance took the lead meanwhile', async () => {
    const url = await server.createDatabase();
    const setup: pg.Pool = openPool({ url, poolSize: 1 });
    await migratePostgres(setup);
    await closePool(setup);
    const turns: string[] = [];
    const releaseB = Promise.withResolvers<void>();
    const a = await instance(url, 'instance-a', 1, notingRunner(turns, 'a', Promise.resolve()));
    const b = await instance(url, 'instance-b', 1, notingRunner(turns, 'b', releaseB.promise));
    try {
      expect(a.loop.leading()).toBe(true);
      expect(b.loop.leading()).toBe(false);
      await a.store.addEvent({
        sessionKey: MAIN,
        text: 'deploy failed',
        source: 'wake',
        trusted: true,
      });

      // The flood: every connection of a's pool held, so its lead checks and its heartbeat's
      // statements wait behind it.
      const flood = await a.pool.connect();
      a.heartbeat.requestNow('wake');
      await waitFor('b to take the lead', async () => b.loop.leading() || undefined, 30_000, 20);
      expect(a.loop.leading()).toBe(false);
      b.heartbeat.requestNow('wake');
      await waitFor('b to start its turn', async () => turns.length > 0 || undefined, 30_000, 20);

      // The flood ends while b's turn runs.
      flood.release();
      await a.heartbeat.idle();
      releaseB.resolve();
      await b.heartbeat.idle();

      const withEvent = turns.filter((turn) => turn.includes('deploy failed'));
      expect(withEvent).toEqual([expect.stringMatching(/^b: /)]);
      // a's heartbeat did reach the store once the flood ended, and gave its turn up there.
      const { rows } = await b.pool.query<{ state: string }>(
        'SELECT state FROM heartbeats ORDER BY state',
      );
      expect(rows.map((row) => row.state)).toEqual(['done', 'failed']);
    } finally {
      releaseB.resolve();
      await a.close();
      await b.close();
    }
  }, 120_000);
});
