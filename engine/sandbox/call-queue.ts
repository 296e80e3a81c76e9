/**
 * Calls waiting in the server for a ready transform process. Waiting is
 * not the call's fault (its deadline has not started), but it is bounded:
 * a call that waits longer than `waitMs` is handed to `expired`.
 *
 * Calls wait in one lane per module (so per mapping), the lanes taking
 * turns (lanes.ts): a flood of one mapping's calls does not hold up
 * another's behind it. Calls sent back from a killed process wait apart,
 * before every lane, oldest first: they had reached a process once.
 */
import { createLanes } from './lanes.ts';

export type CallQueue<T extends { key: string; id: number }> = {
  readonly size: number;
  /** Add at the back of its lane, or, sent back from a killed process, before every lane by id. */
  add(item: T, again?: boolean): void;
  /**
   * The first call that `fits` (`again` is true for one sent back from a killed process), no
   * longer timed by the queue: of the calls sent back, the first that fits; else the front call
   * of the next lane in turn that fits (a lane's calls are new, so where one fits all would).
   */
  takeFirst(fits: (item: T, again: boolean) => boolean): T | undefined;
  /** The waiting calls of each lane, oldest first (not those sent back). */
  lanes(): ReadonlyMap<string, readonly T[]>;
  /** Take the newest call of lane `key` out of the queue, no longer timed by it. */
  takeNewest(key: string): T | undefined;
  /** Everything still waiting (the queue is empty afterwards). */
  clear(): T[];
};

/** A queue of calls in lanes by key, each call with its own waiting bound. */
export function createCallQueue<T extends { key: string; id: number }>(
  waitMs: number,
  expired: (item: T) => void,
): CallQueue<T> {
  const again: T[] = [];
  const lanes = createLanes<T>();
  const timers = new Map<T, NodeJS.Timeout>();
  const untime = <I extends T | undefined>(item: I): I => {
    if (item === undefined) return item;
    clearTimeout(timers.get(item));
    timers.delete(item);
    return item;
  };
  return {
    get size() {
      return again.length + lanes.size;
    },
    add(item, sentBack = false) {
      // Sent back in the order they were made (by id), not sent: lanes send younger calls of one
      // mapping before older ones of another, and a call sent back goes only to a process
      // holding no younger call, so one behind a younger one would wait for it in vain.
      if (sentBack) {
        const at = again.findIndex((held) => held.id > item.id);
        again.splice(at < 0 ? again.length : at, 0, item);
      } else lanes.push(item);
      const timer = setTimeout(() => {
        timers.delete(item);
        const at = again.indexOf(item);
        if (at >= 0) again.splice(at, 1);
        else lanes.remove(item);
        expired(item);
      }, waitMs);
      timers.set(item, timer);
    },
    takeFirst(fits) {
      const at = again.findIndex((item) => fits(item, true));
      if (at >= 0) return untime(again.splice(at, 1)[0] as T);
      return untime(lanes.take((item) => fits(item, false)));
    },
    lanes: () => lanes.lanes(),
    takeNewest: (key) => untime(lanes.takeNewest(key)),
    clear() {
      const all = [...again.splice(0), ...lanes.clear()];
      for (const item of all) untime(item);
      return all;
    },
  };
}
