/**
 * Attack: a wake asks for a heartbeat now on the instance that is just
 * taking the lead over, while its recovery of the previous leader's
 * heartbeats is still on its way to the database. The recovery fails every
 * heartbeat it finds running as the dead leader's: a heartbeat this instance
 * started meanwhile would be failed by its own takeover, its answered turn
 * thrown away and its events shown to the agent again by the next one.
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

/** A store whose recovery reaches the database only once the test lets it (a slow round trip). */
class SlowRecovery extends PostgresRuntimeStore {
  readonly asked = Promise.withResolvers<void>();
  readonly goOn = Promise.withResolvers<void>();
  recovered = false;
  override async recoverHeartbeats(): Promise<Array<{ id: string; pgid: number }>> {
    this.asked.resolve();
    await this.goOn.promise;
    const groups = await super.recoverHeartbeats();
    this.recovered = true;
    return groups;
  }
}

describe.skipIf(skip)('attack: a wake at the moment an instance takes the lead over', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  it('starts no heartbeat that its own recovery then fails: the event is shown once', async () => {
    const url = await server.createDatabase();
    const setup = openPool({ url, poolSize: 1 });
    await migratePostgres(setup);
    // The previous leader held the lead and died.
    await setup.query(
      "INSERT INTO leases (name, owner, until) VALUES ('heartbeat', 'dead', now() + interval '1 second')",
    );
    await closePool(setup);
    const turns: string[] = [];
    // A turn answers once the takeover's recovery is done.
    const recoveryDone = Promise.withResolvers<void>();
    const b = await leadingHeartbeat({
      url,
      owner: 'instance-b',
      leaseMs: LEASE_MS,
      poolSize: 2,
      runner: notingRunner(turns, 'b', recoveryDone.promise),
      makeStore: (pool, options) => new SlowRecovery(pool, options),
    });
    try {
      await b.store.addEvent({
        sessionKey: MAIN,
        text: 'deploy failed',
        source: 'wake',
        trusted: true,
      });
      await b.store.asked.promise;
      // The wake, while the takeover's recovery is on its way.
      b.heartbeat.requestNow('wake');
      await waitFor(
        'the wake to be run or handed over',
        () => turns.length + b.forwarded.length > 0,
      );
      b.store.goOn.resolve();
      await waitFor('the recovery to be done', () => b.store.recovered);
      recoveryDone.resolve();
      await b.heartbeat.idle();
      // The request handed over comes back to this instance, now the leader, as the next look.
      await waitFor('b to lead', () => b.loop.leading());
      b.heartbeat.requestNow('requested');
      await b.heartbeat.idle();

      expect(turns.filter((turn) => turn.includes('deploy failed'))).toHaveLength(1);
      const { rows } = await b.pool.query<{ state: string }>(
        "SELECT state FROM heartbeats WHERE state = 'done'",
      );
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect((await b.store.pendingEvents(MAIN, 10)).length).toBe(0);
    } finally {
      b.store.goOn.resolve();
      recoveryDone.resolve();
      await b.close();
    }
  }, 120_000);
});
