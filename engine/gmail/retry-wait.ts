/**
 * How long a mail sync that could not finish waits before it is tried again: what Gmail asked
 * for (Retry-After, already capped where it was read) or the default for the failure, and never
 * less than a floor that doubles with each failure in a row. `Retry-After: 0` or a date in the
 * past would otherwise send the sync round again at once, hundreds of times a second, for ever.
 */

/** The first floor: Google's error guide starts exponential backoff at one second. */
export const RETRY_FLOOR_MS = 1_000;
/** The highest the floor doubles to (Google's guide: a maximum backoff of 32 or 64 seconds). */
export const RETRY_FLOOR_MAX_MS = 64_000;

/** The wait before the next try, after `failuresInRow` (1 or more) syncs in a row did not finish. */
export function retryWaitMs(asked: number, failuresInRow: number): number {
  const doublings = Math.min(Math.max(0, failuresInRow - 1), 16);
  const floor = Math.min(RETRY_FLOOR_MS * 2 ** doublings, RETRY_FLOOR_MAX_MS);
  // NaN or a negative wait from a broken clock counts as no wait: the floor holds.
  return Number.isFinite(asked) && asked > floor ? asked : floor;
}
