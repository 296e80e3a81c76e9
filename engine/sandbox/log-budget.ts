/**
 * How many lines a mapping may put in the service log per minute, counted
 * in the server (a transform process cannot raise it). Lines past the
 * budget are counted and reported once when the next minute starts.
 */

type Window = { start: number; used: number; suppressed: number };

export type LogBudget = {
  /** May one more line of `key` be logged at `now`? Calls `onSuppressed` when a window closes with drops. */
  take(key: string, now: number): boolean;
  /** Count lines that were dropped before they reached the server. */
  drop(key: string, count: number, now: number): void;
};

/** A per-key budget of `perMinute` lines; `onSuppressed` hears how many were dropped in a minute. */
export function createLogBudget(
  perMinute: number,
  onSuppressed: (key: string, suppressed: number) => void,
): LogBudget {
  const windows = new Map<string, Window>();
  const windowOf = (key: string, now: number): Window => {
    let window = windows.get(key);
    if (!window || now - window.start >= 60_000) {
      if (window && window.suppressed > 0) onSuppressed(key, window.suppressed);
      window = { start: now, used: 0, suppressed: 0 };
      windows.set(key, window);
    }
    return window;
  };
  return {
    take(key, now) {
      const window = windowOf(key, now);
      if (window.used >= perMinute) {
        window.suppressed++;
        return false;
      }
      window.used++;
      return true;
    },
    drop(key, count, now) {
      if (count > 0) windowOf(key, now).suppressed += count;
    },
  };
}
