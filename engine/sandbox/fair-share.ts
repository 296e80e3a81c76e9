/**
 * Who gives way when the transform calls waiting in the server are at their
 * bound (hooks.transforms.maxWaitingCalls, maxWaitingBytes): a new call of a
 * mapping that holds less than another takes the place of that other
 * mapping's newest waiting calls, which are refused (503) instead of it. So
 * a flood of one mapping's calls fills the bound only until another mapping
 * sends one: each mapping keeps about its share, and a call is refused only
 * where its own mapping holds the most. Pure.
 */
import { fits, type Room } from './waiting-bound.ts';

/**
 * The lanes whose newest waiting call is refused, one entry per call, in order, so that one more
 * call of `bytes` in lane `key` fits; [] when it fits as it is; undefined when it does not fit
 * and no lane holds more than `key` would (the new call is refused). `lanes` holds each lane's
 * waiting calls (what each holds in `bytes`), oldest first.
 */
export function makeRoom(
  lanes: ReadonlyMap<string, readonly { bytes: number }[]>,
  key: string,
  bytes: number,
  room: Room,
): string[] | undefined {
  const counts = new Map<string, number>();
  const sums = new Map<string, number>();
  for (const [lane, calls] of lanes) {
    counts.set(lane, calls.length);
    sums.set(
      lane,
      calls.reduce((sum, call) => sum + call.bytes, 0),
    );
  }
  const ownCount = (counts.get(key) ?? 0) + 1;
  const ownBytes = (sums.get(key) ?? 0) + bytes;
  const now = { ...room };
  const given: string[] = [];
  for (;;) {
    if (fits(now, bytes)) return given;
    const callsShort = now.waiting >= now.maxCalls;
    // Short of calls: the lane with the most calls; of bytes: the one with the most bytes.
    const measure = callsShort ? counts : sums;
    const own = callsShort ? ownCount : ownBytes;
    let most: string | undefined;
    for (const [lane, value] of measure) {
      if (lane !== key && value > own && (most === undefined || value > (measure.get(most) ?? 0)))
        most = lane;
    }
    if (most === undefined) return undefined;
    const calls = lanes.get(most) as readonly { bytes: number }[];
    const count = counts.get(most) as number;
    const size = (calls[count - 1] as { bytes: number }).bytes;
    counts.set(most, count - 1);
    sums.set(most, (sums.get(most) as number) - size);
    now.waiting--;
    now.heldBytes -= size;
    given.push(most);
  }
}
