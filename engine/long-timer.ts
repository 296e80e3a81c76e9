/**
 * Timers for configured durations (a heartbeat every 30 days, a run allowed
 * as long): Node waits at most 2^31-1 ms (about 24.8 days) and fires a
 * longer timer at once, so a longer wait is taken in steps.
 */

/** setTimeout's longest delay. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export type LongTimer = { clear(): void };

/** Call `fn` once after `ms`, however long; unref'd (the caller's own work keeps the process alive). */
export function longTimeout(fn: () => void, ms: number): LongTimer {
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    const step = Math.min(left, MAX_TIMER_MS);
    timer = setTimeout(() => (left > step ? arm(left - step) : fn()), step);
    timer.unref();
  };
  arm(ms);
  return { clear: () => clearTimeout(timer) };
}

/** Call `fn` every `ms`, however long, until cleared; unref'd. */
export function longInterval(fn: () => void, ms: number): LongTimer {
  let timer: LongTimer;
  const next = () => {
    timer = longTimeout(() => {
      next();
      fn();
    }, ms);
  };
  next();
  return { clear: () => timer.clear() };
}
