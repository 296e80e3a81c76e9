/**
 * The lockout metric's events (`hookgate:lockout`): one per lock an instance starts (part of
 * the failed-auth limiter). An instance can start one lock twice: counted in memory while the
 * shared store did not answer in time (limiter-fallback.ts), then started in the store too by
 * the held-up counts once they land; or two failures of one address reaching the lock in the
 * same millisecond, which the store answers both as its start. To the client that is one lock
 * (refused throughout), so it is counted once: the limiters of an instance share one of these,
 * and a lock whose address already has one here that overlaps it is that lock.
 */
import { authLocked } from './observe/events.ts';

/** The limiter's settings a count of lock starts needs (rate-limit.ts imports this module). */
export type LockoutSettings = { lockoutSeconds: number; maxClients: number };

export type Lockouts = {
  /** A limiter started a lock of the address, ending at `untilMs` (the callers' clock). */
  started(client: string, untilMs: number): void;
};

/**
 * Whether a lock ending at `untilMs` overlaps the one known to end at `knownUntilMs` (every lock
 * lasts `lockoutMs`). Pure.
 */
export function sameLock(
  knownUntilMs: number | undefined,
  untilMs: number,
  lockoutMs: number,
): boolean {
  return knownUntilMs !== undefined && Math.abs(knownUntilMs - untilMs) < lockoutMs;
}

/** Count locks once per lock; remembers the latest `maxClients` addresses' locks. */
export function createLockouts(settings: LockoutSettings): Lockouts {
  const lockoutMs = settings.lockoutSeconds * 1000;
  // Lock ends by address, about in end order (every lock lasts lockoutMs): the bound drops the
  // one that ended first.
  const ends = new Map<string, number>();
  return {
    started(client, untilMs) {
      const known = ends.get(client);
      if (sameLock(known, untilMs, lockoutMs)) {
        // The two are refused as one, to the later end.
        ends.set(client, Math.max(known as number, untilMs));
        return;
      }
      ends.delete(client);
      ends.set(client, untilMs);
      if (ends.size > settings.maxClients) ends.delete(ends.keys().next().value as string);
      if (authLocked.hasSubscribers)
        authLocked.publish({ lockoutSeconds: settings.lockoutSeconds });
    },
  };
}
