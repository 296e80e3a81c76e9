/**
 * How long `heartbeat now` waits on PostgreSQL for the request to be taken, by what the lead's
 * lease says (pickupWaitMs): never less than the pick-up, never more than the pick-up and a
 * lease, and the shortest only once no instance can be on its way to lead.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pickupWaitMs } from '../engine/cli/control-commands.ts';
import type { LeaderLease } from '../engine/runtime/runtime-store.ts';

const PICKUP = 5_000;

describe('heartbeat now: the wait for a leader', () => {
  it('waits out a held lease, a whole lease after a recent lapse or none, nothing after a lapse longer ago', () => {
    expect(pickupWaitMs({ kind: 'held', leftMs: 4_000 }, 30)).toBe(PICKUP + 4_000);
    expect(pickupWaitMs({ kind: 'held', leftMs: 1e12 }, 30)).toBe(PICKUP + 30_000);
    expect(pickupWaitMs({ kind: 'lapsed', agoMs: 1_000 }, 30)).toBe(PICKUP + 30_000);
    expect(pickupWaitMs({ kind: 'lapsed', agoMs: 30_000 }, 30)).toBe(PICKUP);
    expect(pickupWaitMs({ kind: 'none' }, 30)).toBe(PICKUP + 30_000);
    expect(pickupWaitMs(undefined, 30)).toBe(PICKUP + 30_000);
  });

  it('stays between the pick-up and the pick-up plus a lease, whatever the lease says', () => {
    const lease: fc.Arbitrary<LeaderLease | undefined> = fc.oneof(
      fc.record({
        kind: fc.constant('held' as const),
        leftMs: fc.double({ min: 0, max: 1e15, noNaN: true }),
      }),
      fc.record({
        kind: fc.constant('lapsed' as const),
        agoMs: fc.double({ min: 0, max: 1e15, noNaN: true }),
      }),
      fc.constant({ kind: 'none' as const }),
      fc.constant(undefined),
    );
    fc.assert(
      fc.property(lease, fc.integer({ min: 2, max: 86_400 }), (read, seconds) => {
        const waitMs = pickupWaitMs(read, seconds);
        expect(waitMs).toBeGreaterThanOrEqual(PICKUP);
        expect(waitMs).toBeLessThanOrEqual(PICKUP + seconds * 1000);
        // A successor may be on its way: never the shortest wait.
        const successorPossible =
          read === undefined ||
          read.kind === 'none' ||
          (read.kind === 'lapsed' && read.agoMs < seconds * 1000);
        if (successorPossible) expect(waitMs).toBe(PICKUP + seconds * 1000);
      }),
    );
  });
});
