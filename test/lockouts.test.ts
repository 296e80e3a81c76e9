/**
 * The lockout metric's count: one per lock, also when two limiters of one instance (the
 * fallback's memory and the shared store's) both start it.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLockouts, sameLock } from '../engine/lockouts.ts';
import { authLocked } from '../engine/observe/events.ts';
import { createMemoryLimiter } from '../engine/rate-limit.ts';

const LOCKOUT_MS = 60_000;

describe('sameLock', () => {
  it.each([
    { known: undefined, until: 100_000, same: false, why: 'no lock known' },
    { known: 100_000, until: 100_000, same: true, why: 'the same end' },
    { known: 100_000, until: 103_000, same: true, why: 'started 3 s later (a count landing late)' },
    { known: 103_000, until: 100_000, same: true, why: 'started 3 s earlier' },
    { known: 100_000, until: 160_000, same: false, why: 'started as the known one ended' },
    { known: 100_000, until: 40_000, same: false, why: 'ended as the known one started' },
  ])('$why: $same', ({ known, until, same }) => {
    expect(sameLock(known, until, LOCKOUT_MS)).toBe(same);
  });
});

describe('lockouts shared by two limiters', () => {
  let published = 0;
  const count = () => {
    published++;
  };
  beforeEach(() => {
    published = 0;
    subscribe(authLocked.name, count);
  });
  afterEach(() => {
    unsubscribe(authLocked.name, count);
  });

  const settings = { maxFailures: 1, windowSeconds: 60, lockoutSeconds: 60, maxClients: 10 };

  it('counts a lock both start once, and the next lock after it ends again', () => {
    const lockouts = createLockouts(settings);
    const here = createMemoryLimiter(settings, { lockouts });
    const there = createMemoryLimiter(settings, { lockouts });
    here.recordFailure('192.0.2.1', 0);
    there.recordFailure('192.0.2.1', 2_500);
    expect(published).toBe(1);
    // Another address is another lock.
    there.recordFailure('192.0.2.2', 2_500);
    expect(published).toBe(2);
    // Once both ended, a new lock of the first address counts.
    here.recordFailure('192.0.2.1', 62_500);
    expect(published).toBe(3);
  });

  it('limiters that share nothing count each their own', () => {
    createMemoryLimiter(settings).recordFailure('192.0.2.1', 0);
    createMemoryLimiter(settings).recordFailure('192.0.2.1', 0);
    expect(published).toBe(2);
  });
});
