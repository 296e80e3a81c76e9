/**
 * The outbound connection pools, one per answer-byte cap (fragment-guard.ts bounds a pool's
 * answers on the wire by its cap), leased for one call and given back when it ends. Caps come
 * from the config, so a reload can stop using one and start another: a pool no call holds is
 * kept for its keep-alive connections only while it is among the MAX_IDLE_POOLS given back
 * last; an older one is closed. Pools in use are never closed, so in-flight calls are untouched,
 * and the pools held are bounded by the calls in flight plus MAX_IDLE_POOLS.
 */
import type { Dispatcher } from 'undici';
import { createGuardedDispatcher, type GuardedDispatcher } from './fragment-guard.ts';

/** Unused pools kept for reuse; a config has a handful of distinct caps. */
export const MAX_IDLE_POOLS = 8;

type Pool = { guarded: GuardedDispatcher; users: number };

const pools = new Map<number, Pool>();
// Caps whose pool no call holds, the longest unused first.
const idle = new Set<number>();

/** A lease on the pool for `maxBytes`: its dispatcher, and `release` once the call has ended. */
export type DispatcherLease = { dispatcher: Dispatcher; release(): void };

/** Lease the pool for answers of `maxBytes` (made on first use). */
export function leaseDispatcher(maxBytes: number): DispatcherLease {
  let pool = pools.get(maxBytes);
  if (!pool) {
    pool = { guarded: createGuardedDispatcher(maxBytes), users: 0 };
    pools.set(maxBytes, pool);
  }
  const held = pool;
  held.users++;
  idle.delete(maxBytes);
  let released = false;
  return {
    dispatcher: held.guarded.dispatcher,
    release() {
      // Once per lease: a second release must not take another call's count.
      if (released) return;
      released = true;
      held.users--;
      if (held.users === 0) giveBack(maxBytes);
    },
  };
}

function giveBack(maxBytes: number): void {
  idle.add(maxBytes);
  for (const cap of idle) {
    if (idle.size <= MAX_IDLE_POOLS) break;
    idle.delete(cap);
    const pool = pools.get(cap);
    pools.delete(cap);
    // Nothing is in flight on it; a failure to close its sockets leaves nothing to do.
    pool?.guarded.close().catch(() => undefined);
  }
}
