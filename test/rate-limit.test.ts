/**
 * The failed-auth limiter: lock after N failures in the window, lock length,
 * reset on success, bounded memory.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { createMemoryLimiter } from '../engine/rate-limit.ts';

const settings = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30, maxClients: 100 };

describe('memory limiter', () => {
  it('locks on the Nth failure; the next failure is limited with Retry-After', () => {
    const limiter = createMemoryLimiter(settings);
    for (let i = 0; i < 3; i++) expect(limiter.recordFailure('a', 1000).limited).toBe(false);
    expect(limiter.recordFailure('a', 1000)).toEqual({ limited: true, retryAfterSeconds: 30 });
    expect(limiter.recordFailure('a', 20_500)).toEqual({ limited: true, retryAfterSeconds: 11 });
  });

  it('lifts the lock after lockoutSeconds and starts a fresh window', () => {
    const limiter = createMemoryLimiter(settings);
    for (let i = 0; i < 3; i++) limiter.recordFailure('a', 0);
    expect(limiter.recordFailure('a', 31_000).limited).toBe(false);
    expect(limiter.recordFailure('a', 31_001).limited).toBe(false);
  });

  it('does not lock failures spread beyond the window', () => {
    const limiter = createMemoryLimiter(settings);
    for (let i = 0; i < 10; i++) expect(limiter.recordFailure('a', i * 30_001).limited).toBe(false);
  });

  it('reset clears a lock', () => {
    const limiter = createMemoryLimiter(settings);
    for (let i = 0; i < 3; i++) limiter.recordFailure('a', 0);
    limiter.reset('a');
    expect(limiter.recordFailure('a', 1).limited).toBe(false);
  });

  it('stays bounded: a flood of addresses forgets the oldest', () => {
    const limiter = createMemoryLimiter({ ...settings, maxClients: 10 });
    for (let i = 0; i < 3; i++) limiter.recordFailure('victim', 0);
    for (let i = 0; i < 10; i++) limiter.recordFailure(`flood-${i}`, 0);
    expect(limiter.recordFailure('victim', 1).limited).toBe(false);
  });

  test.prop([
    fc.array(
      fc.record({ client: fc.constantFrom('a', 'b'), dt: fc.nat(20_000), ok: fc.boolean() }),
      { maxLength: 60 },
    ),
  ])(
    'a client is limited only after maxFailures unanswered failures within the window',
    (events) => {
      const limiter = createMemoryLimiter(settings);
      let now = 0;
      const failures: Record<string, number[]> = { a: [], b: [] };
      const lockedUntil: Record<string, number> = { a: 0, b: 0 };
      for (const { client, dt, ok } of events) {
        now += dt;
        if (ok) {
          limiter.reset(client);
          failures[client] = [];
          lockedUntil[client] = 0;
          continue;
        }
        const verdict = limiter.recordFailure(client, now);
        const expectLimited = (lockedUntil[client] as number) > now;
        expect(verdict.limited).toBe(expectLimited);
        if (verdict.limited) {
          expect(verdict.retryAfterSeconds).toBeGreaterThan(0);
          expect(verdict.retryAfterSeconds).toBeLessThanOrEqual(settings.lockoutSeconds);
        }
        if (!expectLimited) {
          // Model: a fixed window opened by the first failure after a lock or window end.
          const list = failures[client] as number[];
          if (
            list.length === 0 ||
            now - (list[0] as number) >= 60_000 ||
            (lockedUntil[client] as number) !== 0
          ) {
            failures[client] = [now];
            lockedUntil[client] = 0;
          } else list.push(now);
          if ((failures[client] as number[]).length >= settings.maxFailures)
            lockedUntil[client] = now + 30_000;
        }
      }
    },
  );
});
