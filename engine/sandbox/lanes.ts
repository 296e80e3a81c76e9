/**
 * Items in one first-in-first-out lane per key, the lanes taking turns:
 * each take serves the next lane (in the order lanes first appeared) that
 * has an item, so a burst of one key's items does not hold up another
 * key's behind it. The server's queue of transform calls and the transform
 * process's own waiting calls are both kept so, by module (one per mapping).
 */
export type Lanes<T extends { key: string }> = {
  readonly size: number;
  push(item: T): void;
  /** The front item of the next lane in turn whose front `fits` (any, without `fits`), taken out. */
  take(fits?: (item: T) => boolean): T | undefined;
  /** Each lane's items, oldest first. */
  lanes(): ReadonlyMap<string, readonly T[]>;
  /** Take `item` out wherever it is; false when it is not here. */
  remove(item: T): boolean;
  /** Take the newest item of lane `key` out. */
  takeNewest(key: string): T | undefined;
  /** Every item, lane by lane (none are left). */
  clear(): T[];
};

export function createLanes<T extends { key: string }>(): Lanes<T> {
  const lanes = new Map<string, T[]>();
  // Lanes in the order they are served; `last` is the one served last (a lane that appears
  // after it is next in turn).
  const order: string[] = [];
  let last = -1;
  let size = 0;
  return {
    get size() {
      return size;
    },
    push(item) {
      let lane = lanes.get(item.key);
      if (!lane) {
        lane = [];
        lanes.set(item.key, lane);
        order.push(item.key);
      }
      lane.push(item);
      size++;
    },
    take(fits) {
      for (let i = 1; i <= order.length; i++) {
        const at = (last + i) % order.length;
        const lane = lanes.get(order[at] as string) as T[];
        const front = lane[0];
        if (front === undefined || (fits && !fits(front))) continue;
        // The next turn is the following lane's, whichever lanes were passed over.
        last = at;
        lane.shift();
        size--;
        return front;
      }
      return undefined;
    },
    lanes: () => lanes,
    remove(item) {
      const lane = lanes.get(item.key);
      const at = lane?.indexOf(item) ?? -1;
      if (!lane || at < 0) return false;
      lane.splice(at, 1);
      size--;
      return true;
    },
    takeNewest(key) {
      const item = lanes.get(key)?.pop();
      if (item !== undefined) size--;
      return item;
    },
    clear() {
      const all = [...lanes.values()].flatMap((lane) => lane.splice(0));
      size = 0;
      return all;
    },
  };
}
