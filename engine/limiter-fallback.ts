/**
 * The failed-auth limiter when its store cannot count (part of the authenticate stage's
 * limiter). A failure whose write the shared store refused (the database unreachable, or
 * failing) is counted here instead, in memory, on this instance alone: an address that keeps
 * guessing during an outage is still locked after `maxFailures`, where it used to get 401 after
 * 401 (and, with the right token answered 503 meanwhile, an oracle without a limit). Only
 * refused writes are counted here, so while the store answers, its counts alone decide (a
 * success on another instance resets them there); a lock is the longer of the two.
 */
import {
  type AuthFailureLimiter,
  createMemoryLimiter,
  type RateLimitSettings,
} from './rate-limit.ts';

/** Wrap a limiter so failures its store refused are counted in memory by this instance. */
export function countingRefusedFailures(
  store: AuthFailureLimiter,
  settings: RateLimitSettings,
): AuthFailureLimiter {
  const local = createMemoryLimiter(settings);
  return {
    lockedFor: (client, nowMs) =>
      Math.max(store.lockedFor(client, nowMs), local.lockedFor(client, nowMs)),
    hasFailures: (client) => store.hasFailures(client) || local.hasFailures(client),
    recordFailure(client, nowMs) {
      const write = store.recordFailure(client, nowMs);
      // A memory store has counted already (nothing to refuse).
      if (!write) return undefined;
      return write.catch((err: unknown) => {
        // Counted before the refusal goes out, as a write that succeeded would be.
        local.recordFailure(client, nowMs);
        throw err;
      });
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
