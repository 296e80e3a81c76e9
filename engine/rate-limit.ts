/**
 * Failed-authentication rate limit per client address (spec 5.5, 8.2).
 * After `maxFailures` failures within `windowSeconds` the address is locked
 * for `lockoutSeconds`; a correct token clears it. The in-memory store is
 * bounded: past `maxClients` the least recently failing address is dropped.
 */

export type RateLimitSettings = {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  maxClients: number;
};

/** What a failed attempt leads to. */
export type FailureVerdict = { limited: false } | { limited: true; retryAfterSeconds: number };

/** Backend-neutral interface, so a shared store (e.g. Redis) can replace the memory one. */
export interface AuthFailureLimiter {
  /** Record a failure; `limited` when the address is already locked (the failure is not counted). */
  recordFailure(client: string, nowMs: number): FailureVerdict;
  /** Forget an address after a successful authentication. */
  reset(client: string): void;
}

type Entry = { windowStart: number; count: number; lockedUntil: number };

/** The embedded, single-process limiter. */
export function createMemoryLimiter(settings: RateLimitSettings): AuthFailureLimiter {
  const entries = new Map<string, Entry>();
  const windowMs = settings.windowSeconds * 1000;
  const lockoutMs = settings.lockoutSeconds * 1000;

  function remember(client: string, entry: Entry): void {
    // Re-insert so Map order is least-recently-failed first.
    entries.delete(client);
    entries.set(client, entry);
    if (entries.size > settings.maxClients) {
      const oldest = entries.keys().next().value as string;
      entries.delete(oldest);
    }
  }

  return {
    recordFailure(client, nowMs) {
      const entry = entries.get(client);
      if (entry && entry.lockedUntil > nowMs) {
        return {
          limited: true,
          retryAfterSeconds: Math.max(1, Math.ceil((entry.lockedUntil - nowMs) / 1000)),
        };
      }
      const fresh = !entry || nowMs - entry.windowStart >= windowMs || entry.lockedUntil !== 0;
      const next: Entry = fresh
        ? { windowStart: nowMs, count: 1, lockedUntil: 0 }
        : { windowStart: entry.windowStart, count: entry.count + 1, lockedUntil: 0 };
      if (next.count >= settings.maxFailures) next.lockedUntil = nowMs + lockoutMs;
      remember(client, next);
      return { limited: false };
    },
    reset(client) {
      entries.delete(client);
    },
  };
}
