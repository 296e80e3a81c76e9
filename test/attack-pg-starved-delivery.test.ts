/**
 * Attack: the leading instance stalls (its pool held by a flood, its lead
 * checks failing) just as it claims a heartbeat reply's delivery attempt.
 * Another instance takes the lead over and the reply's delivery with it.
 * When the stalled claim finally lands, it must not send the reply as well:
 * its claim is stamped with the time it was asked, a lease old, so the new
 * leader takes the attempt over at once and both would send it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import type { HeartbeatDeliveryClaim } from '../engine/runtime/runtime-store.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { PostgresRuntimeStore } from '../engine/store/postgres/runtime-store.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { leadingHeartbeat, MAIN, notingRunner } from './helpers/leading-heartbeat.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const LEASE_MS = 2_000;

/** A store whose delivery claim waits for the test, and whose lead checks fail meanwhile. */
class StalledClaim extends PostgresRuntimeStore {
  stalled = false;
  readonly asked = Promise.withResolvers<void>();
  readonly goOn = Promise.withResolvers<void>();
  constructor(...args: ConstructorParameters<typeof PostgresRuntimeStore>) {
    super(...args);
    const lead = this.leadership.lead;
    this.leadership.lead = async () => {
      if (this.stalled) throw new Error('no connection came in time');
      return lead();
    };
  }
  override async claimHeartbeatDelivery(
    id: string,
    nowMs: number,
    staleBeforeMs: number,
  ): Promise<HeartbeatDeliveryClaim | undefined> {
    if (this.stalled) {
      this.asked.resolve();
      await this.goOn.promise;
      this.stalled = false;
    }
    return super.claimHeartbeatDelivery(id, nowMs, staleBeforeMs);
  }
}

/** A Slack stand-in noting each part under `name`; a's sends answer once `hold` settles. */
function channel(sent: string[], name: string, hold: Promise<void>) {
  const adapter = {
    id: 'slack',
    maxLength: 4000,
    checkRecipient: () => null,
    async send(_to: string, text: string) {
      sent.push(`${name}: ${text}`);
      await hold;
      return { status: 'sent' };
    },
  };
  return new Map([['slack', adapter as unknown as ChannelAdapter]]);
}

describe.skipIf(skip)('attack: the leader stalls as it claims a reply delivery', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  it('sends the reply once: the new leader does, the stalled claim sends nothing', async () => {
    const url = await server.createDatabase();
    const setup = openPool({ url, poolSize: 1 });
    await migratePostgres(setup);
    await closePool(setup);
    const sent: string[] = [];
    const releaseA = Promise.withResolvers<void>();
    const runner = notingRunner([], 'agent', Promise.resolve());
    const a = await leadingHeartbeat({
      url,
      owner: 'instance-a',
      leaseMs: LEASE_MS,
      poolSize: 2,
      runner,
      makeStore: (pool, options) => new StalledClaim(pool, options),
      adapters: channel(sent, 'a', releaseA.promise),
    });
    const b = await leadingHeartbeat({
      url,
      owner: 'instance-b',
      leaseMs: LEASE_MS,
      poolSize: 2,
      runner,
      adapters: channel(sent, 'b', Promise.resolve()),
    });
    try {
      expect(a.loop.leading()).toBe(true);
      // A heartbeat's reply, due for delivery on the last route.
      await a.store.setRoute(MAIN, 'slack', 'C0123456789');
      const id = await a.store.startHeartbeat('wake');
      await a.store.finishHeartbeat(id, {
        state: 'done',
        events: [],
        reply: 'the reply',
        ack: false,
        deliver: true,
      });

      a.store.stalled = true;
      void a.heartbeat.sweepDeliveries(true);
      await a.store.asked.promise;
      await waitFor('b to take the lead', () => b.loop.leading(), 30_000, 20);
      // The stall ends: a's claim lands, a lease late.
      a.store.goOn.resolve();
      await waitFor('a to go on', () => !a.store.stalled, 30_000, 20);
      await waitFor(
        'a to send or hand the attempt back',
        async () =>
          sent.length > 0 ||
          (
            await b.pool.query(
              'SELECT 1 FROM heartbeat_deliveries WHERE claimed_ms IS NULL AND attempts = 0',
            )
          ).rows.length > 0,
        30_000,
        20,
      );
      // b sweeps at every look, as a leader does after each lead check (runtime.ts): one sweep
      // alone could run before the hand-back is readable, or while b's lead check was late.
      await waitFor(
        'the delivery to be over',
        async () => {
          void b.heartbeat.sweepDeliveries(true);
          return (await b.pool.query('SELECT 1 FROM heartbeat_deliveries')).rows.length === 0;
        },
        30_000,
        20,
      );
      releaseA.resolve();
      expect(sent).toEqual(['b: the reply']);
    } finally {
      releaseA.resolve();
      a.store.goOn.resolve();
      await a.close();
      await b.close();
    }
  }, 120_000);
});
