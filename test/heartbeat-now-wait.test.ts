/**
 * `heartbeat now`: how long it waits for the request to be taken, by what the lead's lease says
 * (pickupWaitMs), and how it ends when the store fails under it (askServer): a request
 * nobody took is taken back, one a server took is reported taken even when a read failed, and
 * one that could not be taken back is said to be left.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  askServer,
  CALL_LIMIT_MS,
  LOOK_LIMIT_MS,
  pickupWaitMs,
} from '../engine/cli/server-request.ts';
import { REQUEST_EXPIRY_MS } from '../engine/store/control-requests.ts';
import type { LeaderLease } from '../engine/runtime/runtime-store.ts';

const PICKUP = 5_000;
const GRACE = 5_000;
const MAX_LEASE = 3_600_000;

const leases: fc.Arbitrary<LeaderLease | undefined> = fc.oneof(
  fc.record({
    kind: fc.constant('held' as const),
    leftMs: fc.double({ min: 0, max: 1e13, noNaN: true }),
  }),
  fc.record({
    kind: fc.constant('lapsed' as const),
    agoMs: fc.double({ min: 0, max: 1e13, noNaN: true }),
  }),
  fc.constant({ kind: 'none' as const }),
  fc.constant({ kind: 'sole' as const }),
  fc.constant(undefined),
);

describe('heartbeat now: the wait for a leader', () => {
  it('waits until a grace after the lease runs out, the grace without a lease row, a lease of its own when it cannot be read', () => {
    expect(pickupWaitMs({ kind: 'held', leftMs: 4_000 }, 30)).toBe(PICKUP + 4_000 + GRACE);
    // A lease read is the database's, whatever this command's leaseSeconds, up to the longest.
    expect(pickupWaitMs({ kind: 'held', leftMs: 100_000 }, 30)).toBe(PICKUP + 100_000 + GRACE);
    expect(pickupWaitMs({ kind: 'held', leftMs: 1e12 }, 30)).toBe(PICKUP + MAX_LEASE + GRACE);
    expect(pickupWaitMs({ kind: 'lapsed', agoMs: 1_000 }, 30)).toBe(PICKUP + GRACE - 1_000);
    expect(pickupWaitMs({ kind: 'lapsed', agoMs: 60_000 }, 30)).toBe(PICKUP);
    expect(pickupWaitMs({ kind: 'none' }, 30)).toBe(PICKUP + GRACE);
    expect(pickupWaitMs({ kind: 'sole' }, 30)).toBe(PICKUP);
    expect(pickupWaitMs(undefined, 30)).toBe(PICKUP + 30_000 + GRACE);
  });

  it('stays between the pick-up and the pick-up with the longest lease and the grace', () => {
    fc.assert(
      fc.property(leases, fc.integer({ min: 2, max: 3_600 }), (lease, seconds) => {
        const waitMs = pickupWaitMs(lease, seconds);
        expect(waitMs).toBeGreaterThanOrEqual(PICKUP);
        expect(waitMs).toBeLessThanOrEqual(PICKUP + MAX_LEASE + GRACE);
      }),
    );
  });

  it('ends well before a request left untaken expires: an asker still waiting never loses it', () => {
    // Asking, every look's limit and taking it back, on top of the longest wait.
    const slackMs = 3 * CALL_LIMIT_MS + LOOK_LIMIT_MS;
    fc.assert(
      fc.property(leases, fc.integer({ min: 2, max: 3_600 }), (lease, seconds) => {
        expect(pickupWaitMs(lease, seconds) + slackMs).toBeLessThan(REQUEST_EXPIRY_MS);
      }),
    );
  });

  it('reads no lease row as a lease that just ran out (an older hookgate deleted it at its stop)', () => {
    expect(pickupWaitMs({ kind: 'none' }, 30)).toBe(pickupWaitMs({ kind: 'lapsed', agoMs: 0 }, 30));
  });

  it('waits for an unreadable lease as for one of its own leaseSeconds just renewed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 3_600 }), (seconds) => {
        expect(pickupWaitMs(undefined, seconds)).toBe(
          pickupWaitMs({ kind: 'held', leftMs: seconds * 1000 }, seconds),
        );
      }),
    );
  });

  it('has no jump where the lease runs out: a moment before and a moment after wait about as long', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        fc.integer({ min: 2, max: 86_400 }),
        (left, ago, seconds) => {
          const before = pickupWaitMs({ kind: 'held', leftMs: left }, seconds);
          const after = pickupWaitMs({ kind: 'lapsed', agoMs: ago }, seconds);
          expect(before).toBeGreaterThanOrEqual(after);
          expect(before - after).toBeLessThanOrEqual(left + ago + 1e-6);
        },
      ),
    );
  });

  it('waits less the longer ago the lease ran out, and more the longer it still runs', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.integer({ min: 2, max: 86_400 }),
        (a, b, seconds) => {
          const [low, high] = a <= b ? [a, b] : [b, a];
          expect(pickupWaitMs({ kind: 'lapsed', agoMs: low }, seconds)).toBeGreaterThanOrEqual(
            pickupWaitMs({ kind: 'lapsed', agoMs: high }, seconds),
          );
          expect(pickupWaitMs({ kind: 'held', leftMs: low }, seconds)).toBeLessThanOrEqual(
            pickupWaitMs({ kind: 'held', leftMs: high }, seconds),
          );
        },
      ),
    );
  });
});

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `store` whose first look at the request fails (a dropped connection), the others as it answers. */
function firstLookFails<T extends { requestTaken(seq: number): Promise<boolean> }>(store: T): T {
  let looks = 0;
  return {
    ...store,
    async requestTaken(seq: number) {
      looks++;
      if (looks === 1) throw new Error('connection reset');
      return store.requestTaken(seq);
    },
  };
}

/** A store whose requests table is a map; `fail` makes the named calls throw. */
function fakeStore(options: {
  lease?: LeaderLease;
  takenAfterPolls?: number;
  fail?: { requestTaken?: boolean; withdraw?: boolean; lease?: boolean; request?: boolean };
}) {
  const requests = new Map<number, { taken: boolean }>();
  let polls = 0;
  const store = {
    async leaderLease(): Promise<LeaderLease> {
      if (options.fail?.lease) throw new Error('lease unreadable');
      return options.lease ?? { kind: 'lapsed', agoMs: 1e9 };
    },
    async request(): Promise<number> {
      if (options.fail?.request) throw new Error('cannot ask');
      requests.set(1, { taken: false });
      return 1;
    },
    async requestTaken(seq: number): Promise<boolean> {
      polls++;
      const request = requests.get(seq);
      if (request && options.takenAfterPolls !== undefined && polls >= options.takenAfterPolls)
        request.taken = true;
      if (options.fail?.requestTaken) throw new Error('connection reset');
      return request?.taken ?? false;
    },
    async withdrawRequest(seq: number): Promise<boolean> {
      if (options.fail?.withdraw) throw new Error('connection reset');
      const request = requests.get(seq);
      if (!request || request.taken) return false;
      requests.delete(seq);
      return true;
    },
  };
  return { store, requests };
}

// Each case waits out real pick-up and call limits (5-13 s) on a store of its own: together.
describe.concurrent('heartbeat now: asking', () => {
  it('a request a server takes is taken', async () => {
    const { store } = fakeStore({ takenAfterPolls: 2 });
    expect(await askServer(store, 'heartbeat', 30)).toEqual({ kind: 'taken', seq: 1 });
  });

  it('a server took it, though every look failed: taken (it could not be taken back), not an error', async () => {
    const { store, requests } = fakeStore({ takenAfterPolls: 1, fail: { requestTaken: true } });
    expect(await askServer(store, 'heartbeat', 30)).toEqual({ kind: 'taken', seq: 1 });
    expect(requests.get(1)?.taken).toBe(true);
  }, 20_000);

  it('a look that fails does not end the wait: a server taking the request after it is seen', async () => {
    const { store, requests } = fakeStore({ takenAfterPolls: 3 });
    const flaky = firstLookFails(store);
    expect(await askServer(flaky, 'heartbeat', 30)).toEqual({ kind: 'taken', seq: 1 });
    expect(requests.get(1)?.taken).toBe(true);
  });

  it('looks that fail to the end with nobody taking it: taken back, and the store named as the cause', async () => {
    const { store, requests } = fakeStore({
      lease: { kind: 'sole' },
      fail: { requestTaken: true },
    });
    const asked = await askServer(store, 'heartbeat', 30);
    expect(asked).toMatchObject({ kind: 'unchecked' });
    expect(String((asked as { err: Error }).err)).toContain('connection reset');
    expect(requests.size).toBe(0);
  }, 20_000);

  it('a request that cannot be taken back is reported left behind, with its number', async () => {
    const { store, requests } = fakeStore({
      lease: { kind: 'sole' },
      fail: { requestTaken: true, withdraw: true },
    });
    expect(await askServer(store, 'heartbeat', 30)).toMatchObject({ kind: 'left', seq: 1 });
    expect(requests.size).toBe(1);
  }, 20_000);

  it('a look that failed, then looks that went through: nobody took it, said as such (not the store)', async () => {
    const { store, requests } = fakeStore({ lease: { kind: 'sole' } });
    const once = firstLookFails(store);
    expect(await askServer(once, 'heartbeat', 30)).toEqual({ kind: 'not-taken', waitMs: 5_000 });
    expect(requests.size).toBe(0);
  }, 20_000);

  it('interrupted while it waits: the request is taken back', async () => {
    const { store, requests } = fakeStore({ lease: { kind: 'held', leftMs: 3_600_000 } });
    const interrupt = new AbortController();
    const asking = askServer(store, 'heartbeat', 30, interrupt.signal);
    await until(() => requests.size === 1);
    interrupt.abort();
    expect(await asking).toEqual({ kind: 'interrupted', asked: true });
    expect(requests.size).toBe(0);
  });

  it('interrupted while the lease is read (the store hangs): nothing is asked', async () => {
    const { store, requests } = fakeStore({});
    let reading = false;
    const hanging = {
      ...store,
      leaderLease: () => {
        reading = true;
        return new Promise<LeaderLease>(() => undefined);
      },
    };
    const interrupt = new AbortController();
    const asking = askServer(hanging, 'heartbeat', 30, interrupt.signal);
    await until(() => reading);
    interrupt.abort();
    expect(await asking).toEqual({ kind: 'interrupted', asked: false });
    expect(requests.size).toBe(0);
  });

  it('a look that hangs is given up and looked again: a server that took the request meanwhile is seen', async () => {
    let looks = 0;
    const { store, requests } = fakeStore({ lease: { kind: 'held', leftMs: 20_000 } });
    const firstHangs = {
      ...store,
      requestTaken: (seq: number) => {
        looks++;
        const request = requests.get(seq);
        if (request) request.taken = true;
        return looks === 1 ? new Promise<boolean>(() => undefined) : store.requestTaken(seq);
      },
    };
    // Taken within a look's limit and a poll, not after the lease's 30 s.
    expect(await askServer(firstHangs, 'heartbeat', 30)).toEqual({ kind: 'taken', seq: 1 });
    expect(looks).toBe(2);
  }, 15_000);

  it('interrupted during a look that hangs: not held by it, and the request taken back', async () => {
    const { store, requests } = fakeStore({ lease: { kind: 'held', leftMs: 3_600_000 } });
    const hanging = { ...store, requestTaken: () => new Promise<boolean>(() => undefined) };
    const interrupt = new AbortController();
    const asking = askServer(hanging, 'heartbeat', 30, interrupt.signal);
    await until(() => requests.size === 1);
    interrupt.abort();
    expect(await asking).toEqual({ kind: 'interrupted', asked: true });
    expect(requests.size).toBe(0);
  });

  it('looks that never answer do not hold the command past its wait', async () => {
    const { store, requests } = fakeStore({ lease: { kind: 'sole' } });
    const hanging = { ...store, requestTaken: () => new Promise<boolean>(() => undefined) };
    const asked = await askServer(hanging, 'heartbeat', 30);
    expect(asked).toMatchObject({ kind: 'unchecked' });
    expect(String((asked as { err: Error }).err)).toContain('did not answer');
    expect(requests.size).toBe(0);
  }, 30_000);

  it('a taking back that never answers is reported left behind', async () => {
    const { store, requests } = fakeStore({ lease: { kind: 'sole' } });
    const hanging = { ...store, withdrawRequest: () => new Promise<boolean>(() => undefined) };
    expect(await askServer(hanging, 'heartbeat', 30)).toMatchObject({ kind: 'left', seq: 1 });
    expect(requests.size).toBe(1);
  }, 40_000);

  it('a lease that cannot be read still asks, and a failure to ask asks nothing', async () => {
    const asking = fakeStore({ takenAfterPolls: 1, fail: { lease: true } });
    expect(await askServer(asking.store, 'heartbeat', 30)).toEqual({ kind: 'taken', seq: 1 });
    const refused = fakeStore({ fail: { request: true } });
    await expect(askServer(refused.store, 'heartbeat', 30)).rejects.toThrow('cannot ask');
    expect(refused.requests.size).toBe(0);
  });
});
