/**
 * The failed-auth limiter when its store cannot count (part of the authenticate stage's
 * limiter). A failure whose write the shared store refused (the database unreachable, or
 * failing), or left unanswered for `COUNT_WAIT_MS` (a frozen host, a partition that drops
 * packets), is counted here instead, in memory, on this instance alone: an address that keeps
 * guessing during an outage is still locked after `maxFailures`, where it used to get 401 after
 * 401 (and, with the right token answered 503 meanwhile, an oracle without a limit), and no
 * refusal waits on a database that does not answer. Only those failures are counted here, so
 * while the store answers, its counts alone decide (a success on another instance resets them
 * there); a lock is the longer of the two.
 */
import {
  type AuthFailureLimiter,
  createMemoryLimiter,
  type LimiterOptions,
  type RateLimitSettings,
} from './rate-limit.ts';

/** How long a refusal waits for the store to count its failure before counting it here. */
export const COUNT_WAIT_MS = 2000;

/** The store did not answer a failure's count in time (it may still count it later). */
export class CountNotAnswered extends Error {
  constructor(ms: number) {
    super(`the failure's count was not answered within ${ms} ms`);
    this.name = 'CountNotAnswered';
  }
}

/**
 * Wrap a limiter so failures its store refused, or did not answer in time, are counted here.
 * `lockouts`: the store's own, so a lock counted here and then started in the store by a count
 * that landed late is one lock to the metric (lockouts.ts).
 */
export function countingRefusedFailures(
  store: AuthFailureLimiter,
  settings: RateLimitSettings,
  { waitMs = COUNT_WAIT_MS, lockouts }: { waitMs?: number } & LimiterOptions = {},
): AuthFailureLimiter {
  const local = createMemoryLimiter(settings, lockouts ? { lockouts } : {});
  return {
    lockedFor: (client, nowMs) =>
      Math.max(store.lockedFor(client, nowMs), local.lockedFor(client, nowMs)),
    hasFailures: (client) => store.hasFailures(client) || local.hasFailures(client),
    recordFailure(client, nowMs) {
      const write = store.recordFailure(client, nowMs);
      // A memory store has counted already (nothing to refuse).
      if (!write) return undefined;
      // Counted here once, before the refusal goes out, as a write that succeeded would be.
      let countedHere = false;
      const countHere = () => {
        if (countedHere) return;
        countedHere = true;
        local.recordFailure(client, nowMs);
      };
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          countHere();
          reject(new CountNotAnswered(waitMs));
        }, waitMs);
      });
      const refused = write.catch((err: unknown) => {
        countHere();
        throw err;
      });
      // A write that settles after the wait is heard by the race (no unhandled rejection).
      return Promise.race([refused, late]).finally(() => clearTimeout(timer));
    },
    async reset(client) {
      await local.reset(client);
      await store.reset(client);
    },
    async close() {
      await Promise.all([store.close(), local.close()]);
    },
  };
}
