/**
 * Heartbeat reply delivery over the real SQLite store with a stand-in
 * channel adapter: what a timer or an attempt can miss is still delivered
 * (an attempt that failed inside hookgate, a timer that fired a little
 * early, an attempt another instance left in flight), only the leader sends,
 * and a taken-over attempt sends no further part.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { createLogger } from '../engine/log.ts';
import { createHeartbeatDelivery } from '../engine/runtime/heartbeat-delivery.ts';
import { compileLastRoutePolicy } from '../engine/runtime/last-route.ts';
import type { RuntimeStore } from '../engine/runtime/runtime-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { query, waitFor } from './helpers/runtime.ts';

const MAIN = 'agent:main:main';
const LEASE = 30_000;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Send = (to: string, text: string) => Promise<{ status: 'sent' | 'retry'; reason?: string }>;

function slack(send: Send, maxLength = 4000): ReadonlyMap<string, ChannelAdapter> {
  const adapter = { id: 'slack', maxLength, checkRecipient: () => null, send };
  return new Map([['slack', adapter as unknown as ChannelAdapter]]);
}

async function setup(
  send: Send,
  options: {
    store?: (real: RuntimeStore) => RuntimeStore;
    leading?: () => boolean;
    leaseMs?: number;
    maxLength?: number;
  } = {},
) {
  const temp = tempDir('hookgate-hb-delivery-');
  const real = SqliteRuntimeStore.open(temp.dir);
  await real.setRoute(MAIN, 'slack', 'C0123456789');
  const adapters = slack(send, options.maxLength);
  /** A delivery over this store, as an instance runs it (a second one stands for another instance). */
  const instance = () =>
    createHeartbeatDelivery({
      store: options.store ? options.store(real) : real,
      adapters,
      settings: {
        mainKey: MAIN,
        retry: { maxAttempts: 5, baseDelayMs: 20, maxDelayMs: 40 },
        lastRoute: compileLastRoutePolicy({ pinLastRoute: false, ownerRoutes: [] }, adapters),
        leaseMs: options.leaseMs ?? LEASE,
      },
      logger: createLogger('silent'),
      signal: new AbortController().signal,
      stopped: () => false,
      ...(options.leading && { leading: options.leading }),
    });
  const delivery = instance();
  const others: Array<ReturnType<typeof instance>> = [];
  cleanups.push(async () => {
    for (const other of others) await other.stop();
    await delivery.stop();
    await real.close();
    temp.cleanup();
  });
  const another = () => {
    const other = instance();
    others.push(other);
    return other;
  };
  /** A finished heartbeat whose reply is due. */
  const due = async (reply: string) => {
    const id = await real.startHeartbeat('wake');
    await real.finishHeartbeat(id, { state: 'done', events: [], reply, ack: false, deliver: true });
    return id;
  };
  return { store: real, delivery, due, another, dir: temp.dir };
}

describe('heartbeat reply delivery', () => {
  it('an empty reply is recorded as skipped, with the reason, and nothing is sent', async () => {
    const sent: string[] = [];
    const { store, delivery, due, dir } = await setup(async (_to, text) => {
      sent.push(text);
      return { status: 'sent' };
    });
    const id = await due('');
    await delivery.deliver(id);
    expect(sent).toEqual([]);
    expect(
      query(dir, 'SELECT state, channel, error FROM deliveries WHERE source_id = ?', id),
    ).toEqual([{ state: 'skipped', channel: 'last', error: 'the reply is empty' }]);
    expect(await store.pendingHeartbeatDeliveries(10)).toEqual([]);
  });

  it('an attempt that fails inside hookgate (a store error after its claim) is handed back and delivered later', async () => {
    const sent: string[] = [];
    let failOnce = true;
    const { store, delivery, due } = await setup(
      async (_to, text) => {
        sent.push(text);
        return { status: 'sent' };
      },
      {
        store: (real) =>
          new Proxy(real, {
            get(target, key) {
              if (key === 'lastRoute' && failOnce)
                return async () => {
                  failOnce = false;
                  throw new Error('SQLITE_BUSY: database is locked');
                };
              const value = Reflect.get(target, key);
              return typeof value === 'function' ? value.bind(target) : value;
            },
          }),
      },
    );
    const id = await due('Disk full on web-1');
    await delivery.deliver(id);
    await waitFor('the reply', () => sent.length === 1);
    expect(sent).toEqual(['Disk full on web-1']);
    await waitFor('the delivery to end', async () =>
      (await store.pendingHeartbeatDeliveries(10)).length === 0 ? true : undefined,
    );
  });

  it('an attempt that always fails inside hookgate is retried up to maxAttempts, then given up with a note in the main session', async () => {
    let routeReads = 0;
    const { store, delivery, due } = await setup(async () => ({ status: 'sent' }), {
      store: (real) =>
        new Proxy(real, {
          get(target, key) {
            if (key === 'lastRoute')
              return async () => {
                routeReads++;
                throw new Error('disk I/O error');
              };
            const value = Reflect.get(target, key);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
    });
    await delivery.deliver(await due('never delivered'));
    await waitFor('the delivery to be given up', async () =>
      (await store.pendingHeartbeatDeliveries(10)).length === 0 ? true : undefined,
    );
    expect(routeReads).toBe(5);
    const [note] = await store.events(MAIN, 10);
    expect(note?.text).toContain('Heartbeat reply could not be delivered');
    expect(note?.text).toContain('disk I/O error');
  });

  it('every retried reply goes out, however its timer rounds (none left due)', async () => {
    const tries = new Map<string, number>();
    const { store, delivery, due } = await setup(async (_to, text) => {
      const n = (tries.get(text) ?? 0) + 1;
      tries.set(text, n);
      return n === 1 ? { status: 'retry', reason: '503' } : { status: 'sent' };
    });
    for (let i = 0; i < 60; i++) await delivery.deliver(await due(`reply ${i}`));
    await waitFor('every reply to go out', async () =>
      (await store.pendingHeartbeatDeliveries(100)).length === 0 ? true : undefined,
    );
    expect([...tries.values()].every((n) => n === 2)).toBe(true);
    expect(tries.size).toBe(60);
  });

  it('a reply an instance left in flight is taken over once its lease ran out, found by the sweep', async () => {
    const sent: string[] = [];
    const { store, delivery, due } = await setup(async (_to, text) => {
      sent.push(text);
      return { status: 'sent' };
    });
    const id = await due('left behind');
    // Another instance claimed it a lease ago and died (no restart here to recover it).
    const then = Date.now() - LEASE - 1;
    expect(await store.claimHeartbeatDelivery(id, then, then - LEASE)).toBeDefined();
    await delivery.sweep(true);
    await waitFor('the reply', () => sent.length === 1);
    expect(sent).toEqual(['left behind']);
  });

  it('an instance that does not lead sends nothing and leaves the reply due', async () => {
    const sent: string[] = [];
    const { store, delivery, due } = await setup(
      async (_to, text) => {
        sent.push(text);
        return { status: 'sent' };
      },
      { leading: () => false },
    );
    const id = await due('for the leader');
    await delivery.deliver(id);
    await delivery.sweep(true);
    expect(sent).toEqual([]);
    expect(await store.pendingHeartbeatDeliveries(10)).toEqual([
      { id, dueAtMs: 0, claimedAtMs: null },
    ]);
  });

  it('a send longer than the lease (one slow part) stays with its attempt: neither this instance nor another sends a part twice', async () => {
    const sent: string[] = [];
    const { store, delivery, due, another } = await setup(
      async (_to, text) => {
        await new Promise((resolve) => setTimeout(resolve, text.startsWith('c') ? 700 : 20));
        sent.push(text.slice(0, 1));
        return { status: 'sent' };
      },
      { leaseMs: 300, maxLength: 100 },
    );
    // The lead checks, much more often than the real ones; a second instance sweeps the same
    // store as a new leader would (the lease renewals keep the attempt from it).
    const other = another();
    const checks = setInterval(() => {
      void delivery.sweep();
      void other.sweep(true);
    }, 25);
    cleanups.push(() => clearInterval(checks));
    const reply = ['a', 'b', 'c', 'd', 'e', 'f'].map((c) => c.repeat(90)).join(' ');
    await delivery.deliver(await due(reply));
    await waitFor('the delivery to end', async () =>
      (await store.pendingHeartbeatDeliveries(10)).length === 0 ? true : undefined,
    );
    expect(sent.join('')).toBe('abcdef');
  });

  it('a lease renewal that fails does not fail the progress of the parts after it', async () => {
    const sent: string[] = [];
    let failNext = false;
    let claims = 0;
    const { store, delivery, due } = await setup(
      async (_to, text) => {
        // A slow first part: a renewal falls inside it, and that renewal fails.
        if (text.startsWith('a')) {
          failNext = true;
          await waitFor('a renewal', () => !failNext);
        }
        sent.push(text.slice(0, 1));
        return { status: 'sent' };
      },
      {
        leaseMs: 150,
        maxLength: 100,
        store: (real) =>
          new Proxy(real, {
            get(target, key) {
              if (key === 'claimHeartbeatDelivery') claims++;
              if (key === 'saveHeartbeatDelivery')
                return async (...args: Parameters<RuntimeStore['saveHeartbeatDelivery']>) => {
                  if (failNext) {
                    failNext = false;
                    throw new Error('connection reset');
                  }
                  return target.saveHeartbeatDelivery(...args);
                };
              const value = Reflect.get(target, key);
              return typeof value === 'function' ? value.bind(target) : value;
            },
          }),
      },
    );
    const reply = ['a', 'b', 'c'].map((c) => c.repeat(90)).join(' ');
    await delivery.deliver(await due(reply));
    await waitFor('the delivery to end', async () =>
      (await store.pendingHeartbeatDeliveries(10)).length === 0 ? true : undefined,
    );
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(await store.events(MAIN, 10)).toEqual([]);
    // In one attempt: the failed renewal cost no retry.
    expect(claims).toBe(1);
  });

  it('an attempt taken over mid-send sends no further part', async () => {
    const sent: string[] = [];
    let taken = false;
    let store: RuntimeStore | undefined;
    let beat = '';
    const long = `${'a'.repeat(3990)} ${'b'.repeat(3990)} ${'c'.repeat(3990)}`;
    const setupResult = await setup(async (_to, text) => {
      sent.push(text.slice(0, 1));
      // After the first part, another instance takes the attempt over (its lease ran out).
      if (!taken && store) {
        taken = true;
        const later = Date.now() + LEASE + 1;
        await store.claimHeartbeatDelivery(beat, later, later - LEASE);
      }
      return { status: 'sent' };
    });
    store = setupResult.store;
    beat = await setupResult.due(long);
    await setupResult.delivery.deliver(beat);
    expect(sent).toEqual(['a']);
  });
});
