/**
 * The contract every failed-auth limiter passes: the lock after `maxFailures`
 * within the window, its length, what a success may and may not clear, and
 * the local answers the request path relies on. Run by each backend's test
 * file; a shared backend's factory gives a fresh, empty store (closed by
 * `close`), and every test uses its own addresses so a store may be reused (as long as it
 * holds fewer counting addresses than `maxClients`: past that a shared store cannot rule out
 * a count for any address, and `hasFailures` answers true for all).
 */
import { randomUUID } from 'node:crypto';
import { fc, test } from '@fast-check/vitest';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthFailureLimiter, RateLimitSettings } from '../engine/rate-limit.ts';

export type LimiterFactory = (settings: RateLimitSettings) => Promise<AuthFailureLimiter>;

export const contractSettings: RateLimitSettings = {
  maxFailures: 3,
  windowSeconds: 60,
  lockoutSeconds: 30,
  maxClients: 100,
};

/** Count `times` failures one after another, each settled before the next (as requests are). */
export async function fail(
  limiter: AuthFailureLimiter,
  client: string,
  atMs: number,
  times = 1,
): Promise<void> {
  for (let i = 0; i < times; i++) await limiter.recordFailure(client, atMs);
}

/** `propertyRuns` lowers the model check's runs for a backend whose limiter is slow to make. */
export function describeLimiter(
  name: string,
  factory: LimiterFactory,
  { propertyRuns = 100 }: { propertyRuns?: number } = {},
): void {
  describe(`failed-auth limiter contract: ${name}`, () => {
    const open: AuthFailureLimiter[] = [];
    async function limiter(settings = contractSettings): Promise<AuthFailureLimiter> {
      const made = await factory(settings);
      open.push(made);
      return made;
    }
    // Addresses unique to the test, so a reused shared store holds nothing about them.
    const address = () => `198.51.100.${randomUUID()}`;

    afterEach(async () => {
      await Promise.all(open.splice(0).map((made) => made.close()));
    });

    it('locks an address on the failure that reaches maxFailures within the window', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 1000, 2);
      expect(l.lockedFor(a, 1000)).toBe(0);
      await fail(l, a, 1000);
      expect(l.lockedFor(a, 1000)).toBe(30);
    });

    it('does not lock when the failures are spread beyond the window', async () => {
      const l = await limiter();
      const a = address();
      for (let i = 0; i < 6; i++) {
        await fail(l, a, i * 30_001);
        expect(l.lockedFor(a, i * 30_001)).toBe(0);
      }
    });

    it("locks on maxFailures within any window, also across the end of the first failure's", async () => {
      const l = await limiter();
      const a = address();
      // A fixed window opened at 0 ends at 60 s, and one opened at 61 s would let these
      // through: three failures within 11 s.
      await fail(l, a, 0);
      await fail(l, a, 50_000);
      await fail(l, a, 61_000);
      expect(l.lockedFor(a, 61_000)).toBe(0);
      await fail(l, a, 61_000);
      expect(l.lockedFor(a, 61_000)).toBe(30);
    });

    it('counts each address on its own', async () => {
      const l = await limiter();
      const [a, b] = [address(), address()];
      await fail(l, a, 0, 2);
      await fail(l, b, 0, 2);
      expect(l.lockedFor(a, 0)).toBe(0);
      await fail(l, a, 0);
      expect(l.lockedFor(a, 0)).toBe(30);
      expect(l.lockedFor(b, 0)).toBe(0);
    });

    it('holds the lock for lockoutSeconds, then the address starts from nothing', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 1000, 3);
      expect(l.lockedFor(a, 20_500)).toBe(11);
      expect(l.lockedFor(a, 31_000)).toBe(0);
      await fail(l, a, 31_000, 2);
      expect(l.lockedFor(a, 31_001)).toBe(0);
    });

    it('answers at least 1 second while locked, and 0 the moment the lock ends', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 0, 3);
      expect(l.lockedFor(a, 29_999)).toBe(1);
      expect(l.lockedFor(a, 30_000)).toBe(0);
    });

    it('does not count failures while locked (the guard refuses them first)', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 0, 3);
      await fail(l, a, 10_000, 5);
      expect(l.lockedFor(a, 10_000)).toBe(20);
      expect(l.lockedFor(a, 30_000)).toBe(0);
      await fail(l, a, 30_000, 2);
      expect(l.lockedFor(a, 30_000)).toBe(0);
    });

    it('a correct credential (reset) does not lift a lock', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 0, 3);
      await l.reset(a);
      expect(l.lockedFor(a, 1)).toBe(30);
    });

    it('reset forgets the counted failures', async () => {
      const l = await limiter();
      const a = address();
      await fail(l, a, 0, 2);
      await l.reset(a);
      await fail(l, a, 1, 2);
      expect(l.lockedFor(a, 1)).toBe(0);
    });

    it('tells, without the store, whether this instance holds a count to reset', async () => {
      const l = await limiter();
      const a = address();
      expect(l.hasFailures(a)).toBe(false);
      await fail(l, a, 0);
      expect(l.hasFailures(a)).toBe(true);
      await l.reset(a);
      expect(l.hasFailures(a)).toBe(false);
      // The lock takes the count with it: a success while locked has nothing to clear.
      await fail(l, a, 0, 3);
      expect(l.hasFailures(a)).toBe(false);
    });

    test.prop(
      [
        fc.array(
          fc.record({ client: fc.constantFrom(0, 1), dt: fc.nat(20_000), ok: fc.boolean() }),
          { maxLength: 80 },
        ),
      ],
      { numRuns: propertyRuns },
    )('an address is locked exactly while a model of window and lock says so', async (events) => {
      // Made and closed per run: `limiter()` would keep every run's limiter open until the test ends.
      const l = await factory(contractSettings);
      try {
        const clients = [address(), address()];
        let now = 0;
        const failures: number[][] = [[], []];
        const lockedUntil = [0, 0];
        for (const { client, dt, ok } of events) {
          now += dt;
          const key = clients[client] as string;
          const expectLocked = (lockedUntil[client] as number) > now;
          const seconds = l.lockedFor(key, now);
          expect(seconds > 0).toBe(expectLocked);
          if (expectLocked) {
            expect(seconds).toBeLessThanOrEqual(contractSettings.lockoutSeconds);
            continue; // the guard refuses a locked address before anything is counted
          }
          if (ok) {
            // As the request path does: a reset only when this instance holds a count.
            if (l.hasFailures(key)) await l.reset(key);
            failures[client] = [];
            continue;
          }
          await l.recordFailure(key, now);
          // Model: a sliding window, the failures of the 60 s before this one (none before a lock).
          failures[client] = [
            ...(failures[client] as number[]).filter((at) => at > now - 60_000),
            now,
          ];
          if ((failures[client] as number[]).length >= contractSettings.maxFailures) {
            lockedUntil[client] = now + 30_000;
            failures[client] = [];
          }
        }
      } finally {
        await l.close();
      }
    });
  });
}
