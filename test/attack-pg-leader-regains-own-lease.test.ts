/**
 * Attack: the leader's lead checks fail for a whole lease (a database stall)
 * while its heartbeat's turn runs, and no other instance takes the lead
 * meanwhile. When the checks answer again it takes the lead back; its
 * recovery of "the previous leader's" heartbeats must not fail the one it
 * runs itself: that answered turn would be thrown away (its runner's group
 * ended) and its events shown to the agent again by the next heartbeat.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { PostgresRuntimeStore } from '../engine/store/postgres/runtime-store.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { leadingHeartbeat, MAIN, notingRunner } from './helpers/leading-heartbeat.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const LEASE_MS = 2_000;

/** A store whose lead checks fail while `stalled` (counted). */
class StalledChecks extends PostgresRuntimeStore {
  stalled = false;
  failed = 0;
  constructor(...args: ConstructorParameters<typeof PostgresRuntimeStore>) {
    super(...args);
    const lead = this.leadership.lead;
    this.leadership.lead = async () => {
      if (!this.stalled) return lead();
      this.failed += 1;
      throw new Error('no connection came in time');
    };
  }
}

describe.skipIf(skip)('attack: the leader takes its own lapsed lead back mid-turn', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  it('keeps the heartbeat it runs: the turn is answered once and its event consumed', async () => {
    const url = await server.createDatabase();
    const setup = openPool({ url, poolSize: 1 });
    await migratePostgres(setup);
    await closePool(setup);
    const turns: string[] = [];
    const release = Promise.withResolvers<void>();
    const a = await leadingHeartbeat({
      url,
      owner: 'instance-a',
      leaseMs: LEASE_MS,
      poolSize: 2,
      runner: notingRunner(turns, 'a', release.promise),
      makeStore: (pool, options) => new StalledChecks(pool, options),
    });
    try {
      expect(a.loop.leading()).toBe(true);
      await a.store.addEvent({
        sessionKey: MAIN,
        text: 'deploy failed',
        source: 'wake',
        trusted: true,
      });
      a.heartbeat.requestNow('wake');
      await waitFor('the turn to start', () => turns.length > 0, 30_000, 20);
      // The stall: unconfirmed for a lease, the lead lapses; nobody else takes it.
      a.store.stalled = true;
      await waitFor('the lead to lapse', () => !a.loop.leading(), 30_000, 20);
      // A check that fails after the lapse is the one that lets the lead go.
      const failed = a.store.failed;
      await waitFor('a check to fail past the lapse', () => a.store.failed > failed, 30_000, 20);
      a.store.stalled = false;
      await waitFor('the lead to come back', () => a.loop.leading(), 30_000, 20);
      release.resolve();
      await a.heartbeat.idle();

      const { rows } = await a.pool.query<{ state: string }>('SELECT state FROM heartbeats');
      expect(rows.map((row) => row.state)).toEqual(['done']);
      expect(await a.store.pendingEvents(MAIN, 10)).toEqual([]);
      expect(turns.filter((turn) => turn.includes('deploy failed'))).toHaveLength(1);
    } finally {
      release.resolve();
      await a.close();
    }
  }, 120_000);
});
