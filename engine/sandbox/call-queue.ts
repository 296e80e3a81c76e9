/**
 * Calls waiting in the server for a ready transform process. Waiting is
 * not the call's fault (its deadline has not started), but it is bounded:
 * a call that waits longer than `waitMs` is handed to `expired`.
 */

export type CallQueue<T> = {
  readonly size: number;
  /** Add at the back, or at the front for calls sent back from a killed process. */
  add(item: T, front?: boolean): void;
  /** The next call, no longer timed by the queue. */
  take(): T | undefined;
  /** The first call that `fits`, no longer timed by the queue. */
  takeFirst(fits: (item: T) => boolean): T | undefined;
  /** Everything still waiting (the queue is empty afterwards). */
  clear(): T[];
};

/** A FIFO of calls, each with its own waiting bound. */
export function createCallQueue<T>(waitMs: number, expired: (item: T) => void): CallQueue<T> {
  const items: T[] = [];
  const timers = new Map<T, NodeJS.Timeout>();
  const untime = (item: T): void => {
    clearTimeout(timers.get(item));
    timers.delete(item);
  };
  return {
    get size() {
      return items.length;
    },
    add(item, front = false) {
      if (front) items.unshift(item);
      else items.push(item);
      const timer = setTimeout(() => {
        timers.delete(item);
        const at = items.indexOf(item);
        if (at >= 0) items.splice(at, 1);
        expired(item);
      }, waitMs);
      timers.set(item, timer);
    },
    take() {
      const item = items.shift();
      if (item !== undefined) untime(item);
      return item;
    },
    takeFirst(fits) {
      const at = items.findIndex(fits);
      if (at < 0) return undefined;
      const [item] = items.splice(at, 1) as [T];
      untime(item);
      return item;
    },
    clear() {
      for (const item of items) untime(item);
      return items.splice(0);
    },
  };
}
