/**
 * Deadlines of one fixed length (a body read's time limit) watched by one
 * timer. A timer per request was about 4% of a /wake's CPU under load (each
 * setTimeout builds a Timeout and links it into node's lists, each clear
 * unlinks it); every watch here has the same length, so they expire in the
 * order they began (a monotonic clock) and the oldest one left is always the
 * next due.
 */

/** A watch in progress: pass it back to `cancel` when the work ended in time. */
export type Watch = { readonly dueMs: number; readonly expire: () => void };

export type Deadlines = {
  /** Call `expire` once `timeoutMs` have passed, unless cancelled before. */
  watch(expire: () => void): Watch;
  /** The work ended: its deadline no longer applies (a second cancel does nothing). */
  cancel(watch: Watch): void;
  /** Watches in progress (for tests). */
  readonly size: number;
};

// Node fires a longer timer at once (with a warning); a later deadline is armed in steps.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Deadlines of `timeoutMs` each, with one timer for all of them. */
export function createDeadlines(timeoutMs: number): Deadlines {
  // Insertion order is start order, and with one length also due order.
  const open = new Set<Watch>();
  let timer: NodeJS.Timeout | undefined;
  // While expiries run, a watch they begin is left to the sweep's own re-arming.
  let sweeping = false;

  function arm(dueMs: number, nowMs: number): void {
    timer = setTimeout(sweep, Math.min(Math.max(1, dueMs - nowMs), MAX_TIMER_MS));
    // The server (or the reader's own socket) keeps the process up, not a pending limit.
    timer.unref();
  }

  function sweep(): void {
    timer = undefined;
    sweeping = true;
    const nowMs = performance.now();
    try {
      for (const watch of open) {
        if (watch.dueMs > nowMs) break;
        open.delete(watch);
        try {
          watch.expire();
        } catch {
          // One failing expiry must not keep the others from theirs; its owner reports its errors.
        }
      }
    } finally {
      sweeping = false;
    }
    // One timer, for the oldest left (a watch begun by an expiry above included).
    const next = open.values().next().value;
    if (next) arm(next.dueMs, performance.now());
  }

  return {
    watch(expire) {
      const nowMs = performance.now();
      const watch: Watch = { dueMs: nowMs + timeoutMs, expire };
      open.add(watch);
      // Armed for an older watch that may have ended already: that sweep re-arms for the next.
      if (timer === undefined && !sweeping) arm(watch.dueMs, nowMs);
      return watch;
    },
    cancel(watch) {
      open.delete(watch);
    },
    get size() {
      return open.size;
    },
  };
}
