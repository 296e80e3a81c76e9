/**
 * Failed-authentication rate limit per client address (spec 5.5, 8.2).
 * After `maxFailures` failures within `windowSeconds` the address is locked
 * for `lockoutSeconds`. While locked, nothing lifts the lock early, not even
 * a correct token: otherwise the lock would only relabel wrong guesses.
 * Memory is bounded: counting and locked addresses are kept apart, each at
 * most `maxClients`, so a flood of fresh addresses can push out other
 * addresses' counts but never a lock that a newer lock did not replace.
 */
import { authLocked } from './observe/events.ts';

export type RateLimitSettings = {
  maxFailures: number;
  windowSeconds: number;
  lockoutSeconds: number;
  maxClients: number;
};

/** Backend-neutral interface, so a shared store can replace the memory one. */
export interface AuthFailureLimiter {
  /** Seconds until the address's lock ends (at least 1), or 0 when it is not locked. */
  lockedFor(client: string, nowMs: number): number;
  /** Count a failed authentication; the failure that reaches `maxFailures` starts the lock. */
  recordFailure(client: string, nowMs: number): void;
  /** Forget the failures counted for an address after it authenticated (never a lock). */
  reset(client: string): void;
}

type Window = { start: number; count: number };

/** The embedded, single-process limiter. */
export function createMemoryLimiter(settings: RateLimitSettings): AuthFailureLimiter {
  const counting = new Map<string, Window>();
  // Lock ends are all `lockoutSeconds` after their start, so insertion order is expiry order.
  const locked = new Map<string, number>();
  const windowMs = settings.windowSeconds * 1000;
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
      if (lockedFor(client, nowMs) > 0) return;
      const entry = counting.get(client);
      const next: Window =
        !entry || nowMs - entry.start >= windowMs
          ? { start: nowMs, count: 1 }
          : { start: entry.start, count: entry.count + 1 };
      if (next.count < settings.maxFailures) {
        bounded(counting, client, next);
        return;
      }
      counting.delete(client);
      bounded(locked, client, nowMs + lockoutMs);
      if (authLocked.hasSubscribers)
        authLocked.publish({ lockoutSeconds: settings.lockoutSeconds });
    },
    reset(client) {
      counting.delete(client);
    },
  };
}
