/**
 * Failed-authentication rate limit per client address (spec 5.5, 8.2).
 * After `maxFailures` failures within any `windowSeconds` (a sliding window)
 * the address is locked for `lockoutSeconds`. While locked, nothing lifts the lock early, not even
 * a correct token: otherwise the lock would only relabel wrong guesses.
 * Memory is bounded: counting and locked addresses are kept apart, each at
 * most `maxClients`, so a flood of fresh addresses can push out other
 * addresses' counts but never a lock that a newer lock did not replace.
 */
import { createLockouts, type Lockouts } from './lockouts.ts';
import type { Logger } from './log.ts';

export type RateLimitSettings = {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  maxClients: number;
};

/**
 * Backend-neutral interface, so a store shared by several instances can replace the memory one.
 *
 * The request path asks `lockedFor` on every request, so it is synchronous and answered from
 * a local view of the locks: a shared backend keeps the locks this instance learnt from its
 * own `recordFailure` answers plus a periodic refresh of the locked addresses (so a lock
 * started on another instance is seen here within one refresh), with lock ends in the
 * caller's clock (`nowMs`). Writes happen only where a failure is counted: one per failure
 * of an address not locked here (a locked one is refused before it can fail), so a guesser
 * costs about `maxFailures` writes per window (plus those in flight when the lock begins,
 * and one per instance that has not seen the lock yet) and none while locked. A success
 * writes only when `hasFailures` says a failure may be counted. Local state stays bounded
 * by `maxClients`.
 * `recordFailure` and `reset` may reject when a shared store is down; the instance wraps the
 * limiter in `reportingStoreErrors`, so a request never fails because of it.
 */
export interface AuthFailureLimiter {
  /** Seconds until the address's lock ends (at least 1), or 0 when it is not locked. */
  lockedFor(client: string, nowMs: number): number;
  /**
   * Count a failed authentication; the failure that reaches `maxFailures` starts the lock.
   * Once settled, `lockedFor` answers the address's lock here, also one another instance started.
   * A limiter that counts in memory has counted on return and returns nothing (a refusal then
   * waits for no promise); a shared one returns its write.
   */
  recordFailure(client: string, nowMs: number): Promise<void> | undefined;
  /**
   * Whether a failure may be counted for the address that no lock or reset has cleared, as far
   * as this instance knows (a local answer: its own counts, and on a shared store those the
   * other instances hold as of the last refresh). Callers reset only then, so a successful
   * authentication of an address with nothing counted writes nothing to a shared store. A
   * shared store that holds more counting addresses than `maxClients` answers true for every
   * address: a bounded view cannot rule one out, and a count left after a success would lock
   * the client out sooner.
   */
  hasFailures(client: string): boolean;
  /** Forget the failures counted for an address after it authenticated (never a lock). */
  reset(client: string): Promise<void>;
  /** Stop refreshing and release the store's connections (after the last request). */
  close(): Promise<void>;
}

/**
 * The limiter as the request path uses it: a write the store refuses is logged once per
 * outage, not per request, and the request goes on (its 401 still goes out; the failure is
 * counted in memory meanwhile, limiter-fallback.ts); the failure that comes through again
 * says so.
 */
export function reportingStoreErrors(
  limiter: AuthFailureLimiter,
  logger: Pick<Logger, 'warn' | 'info'>,
): AuthFailureLimiter {
  let down = false;
  function reachable(): void {
    if (!down) return;
    down = false;
    logger.info('failed-auth limiter store reachable again');
  }
  function settle(write: Promise<void>): Promise<void> {
    return write.then(reachable, (err: unknown) => {
      if (down) return;
      down = true;
      logger.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'failed-auth limiter store unreachable: failures are counted by this instance alone until it answers',
      );
    });
  }
  return {
    lockedFor: (client, nowMs) => limiter.lockedFor(client, nowMs),
    hasFailures: (client) => limiter.hasFailures(client),
    recordFailure(client, nowMs) {
      const write = limiter.recordFailure(client, nowMs);
      if (write) return settle(write);
      // Counted at once: as good a sign as a write that resolved.
      reachable();
      return undefined;
    },
    reset: (client) => settle(limiter.reset(client)),
    close: () => limiter.close(),
  };
}

/** The most failure times kept per address: a limit past it is counted in fixed windows only. */
export const MAX_FAILURE_TIMES = 1000;

/** What is kept of an address's failures: a fixed window's count, and the latest times. */
export type FailureCount = { windowStart: number; count: number; times: readonly number[] };

/**
 * An address's failures after one more at `nowMs`, and whether that one starts the lock. Two
 * counts, either of which locks: the failures within the window before this one (a sliding
 * window, from the latest times kept: at most `maxFailures - 1`, and MAX_FAILURE_TIMES), and the
 * fixed window opened by the first failure after the last one ended (the count the previous
 * version kept, which alone let twice `maxFailures - 1` through in a burst across its end, and
 * which counts a limit past MAX_FAILURE_TIMES). Pure.
 */
export function countFailure(
  earlier: FailureCount | undefined,
  nowMs: number,
  settings: Pick<RateLimitSettings, 'maxFailures' | 'windowSeconds'>,
): { next: FailureCount; locks: boolean } {
  const windowMs = settings.windowSeconds * 1000;
  const fresh = !earlier || nowMs - earlier.windowStart >= windowMs;
  const count = fresh ? 1 : earlier.count + 1;
  const windowStart = fresh ? nowMs : earlier.windowStart;
  const recent = (earlier?.times ?? []).filter((at) => at > nowMs - windowMs);
  recent.push(nowMs);
  // Past MAX_FAILURE_TIMES the sliding count could never reach the limit: no times kept.
  const keep = settings.maxFailures - 1 > MAX_FAILURE_TIMES ? 0 : settings.maxFailures - 1;
  const times = recent.slice(Math.max(0, recent.length - keep));
  return {
    next: { windowStart, count, times },
    locks: count >= settings.maxFailures || recent.length >= settings.maxFailures,
  };
}

export type LimiterOptions = {
  /**
   * Where the locks the limiter starts are counted for the metric (default: its own). The
   * limiters of one instance share one, so a lock two of them start is counted once.
   */
  lockouts?: Lockouts;
};

/** The embedded, single-process limiter. */
export function createMemoryLimiter(
  settings: RateLimitSettings,
  options: LimiterOptions = {},
): AuthFailureLimiter {
  const lockouts = options.lockouts ?? createLockouts(settings);
  // Per address, what counts towards its lock (countFailure).
  const counting = new Map<string, FailureCount>();
  // Lock ends are all `lockoutSeconds` after their start, so insertion order is expiry order.
  const locked = new Map<string, number>();
  const lockoutMs = settings.lockoutSeconds * 1000;

  function bounded<V>(map: Map<string, V>, key: string, value: V): void {
    // Re-insert so Map order is least-recently-touched first.
    map.delete(key);
    map.set(key, value);
    if (map.size > settings.maxClients) map.delete(map.keys().next().value as string);
  }

  function lockedFor(client: string, nowMs: number): number {
    const until = locked.get(client);
    if (until === undefined) return 0;
    if (until <= nowMs) {
      locked.delete(client);
      return 0;
    }
    return Math.max(1, Math.ceil((until - nowMs) / 1000));
  }

  return {
    lockedFor,
    recordFailure(client, nowMs) {
      if (lockedFor(client, nowMs) > 0) return undefined;
      const { next, locks } = countFailure(counting.get(client), nowMs, settings);
      if (!locks) {
        bounded(counting, client, next);
        return undefined;
      }
      counting.delete(client);
      bounded(locked, client, nowMs + lockoutMs);
      lockouts.started(client, nowMs + lockoutMs);
      return undefined;
    },
    hasFailures(client) {
      return counting.has(client);
    },
    async reset(client) {
      counting.delete(client);
    },
    async close() {},
  };
}
