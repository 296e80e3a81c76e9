/**
 * When the worker looks at its store for work it did not start itself.
 * Where one process owns the store (SQLite), nothing reads it on a timer:
 * the command line rings the store's doorbell after its writes, a head left
 * waiting for its backoff by an earlier process gets a timer for its due
 * time, and a look that failed (a busy or full disk) is tried again after a
 * growing delay. Where other instances write without ringing (PostgreSQL),
 * or the doorbell cannot be watched, the store is read every `pollMs`.
 */
import type { Logger } from '../log.ts';
import type { RuntimeStore } from './runtime-store.ts';

export type StoreWatchDeps = {
  store: Pick<RuntimeStore, 'watchOutside' | 'nextDueAtMs'>;
  pollMs: number;
  /** Take requests, apply wakes, then look for runs. */
  look: () => void;
  /** Look for runs. */
  pass: () => void;
  logger: Logger;
};

export type StoreWatch = {
  /** A pass left room: arm a timer for the next head still waiting for its backoff. */
  roomLeft(): Promise<void>;
  /** A stage of a look or a pass failed: look again later (where nothing polls). */
  failed(stage: string): void;
  /** A stage went through: once every stage that failed has, the delay starts over. */
  succeeded(stage: string): void;
  stop(): void;
};

// Node fires a longer timer at once: a later due time is looked at again after this long.
const MAX_TIMER_MS = 2 ** 31 - 1;
// A failing store is looked at again after pollMs, then twice as long each time, up to this.
const MAX_RETRY_MS = 30_000;

/** Start watching; the first look is the caller's. */
export function startStoreWatch(deps: StoreWatchDeps): StoreWatch {
  const { store, logger } = deps;
  let poll: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  let dueTimer: NodeJS.Timeout | undefined;
  let dueAtMs = Number.POSITIVE_INFINITY;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryMs = 0;
  // The stages whose last run failed: a look's own stages may go through while its pass fails.
  const failing = new Set<string>();
  let stopped = false;

  function startPolling(): void {
    if (poll || stopped) return;
    poll = setInterval(deps.look, deps.pollMs);
    poll.unref();
  }

  if (store.watchOutside) {
    try {
      unwatch = store.watchOutside(deps.look, (err) => {
        logger.warn({ err: err.message }, 'store changes no longer watched: polling instead');
        unwatch?.();
        unwatch = undefined;
        startPolling();
      });
    } catch (err) {
      logger.warn(
        { err: (err as Error).message },
        'store changes cannot be watched: polling instead',
      );
      startPolling();
    }
  } else startPolling();

  return {
    async roomLeft() {
      if (poll || stopped || !store.nextDueAtMs) return;
      const at = await store.nextDueAtMs();
      if (at === null || at >= dueAtMs || stopped) return;
      clearTimeout(dueTimer);
      dueAtMs = at;
      dueTimer = setTimeout(
        () => {
          dueAtMs = Number.POSITIVE_INFINITY;
          deps.pass();
        },
        Math.min(Math.max(0, at - Date.now()) + 5, MAX_TIMER_MS),
      );
      dueTimer.unref();
    },
    failed(stage) {
      failing.add(stage);
      if (poll || stopped || retryTimer) return;
      retryMs = Math.min(Math.max(deps.pollMs, retryMs * 2), MAX_RETRY_MS);
      retryTimer = setTimeout(() => {
        retryTimer = undefined;
        deps.look();
      }, retryMs);
      retryTimer.unref();
    },
    succeeded(stage) {
      if (failing.delete(stage) && failing.size === 0) retryMs = 0;
    },
    stop() {
      stopped = true;
      if (poll) clearInterval(poll);
      unwatch?.();
      clearTimeout(dueTimer);
      clearTimeout(retryTimer);
    },
  };
}
