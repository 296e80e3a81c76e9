/**
 * Gmail history ids: unsigned 64-bit counters that Google sends as JSON
 * strings (and, some report, as numbers). They are kept as decimal strings
 * and compared as BigInt, because they can pass JavaScript's safe integers.
 */

// An unsigned 64-bit value has at most 20 decimal digits.
const DECIMAL = /^(0|[1-9]\d{0,19})$/;
const UINT64_MAX = 2n ** 64n - 1n;

/** A history id as a canonical decimal string; undefined when it is not an unsigned 64-bit value. */
export function normaliseHistoryId(value: unknown): string | undefined {
  if (typeof value === 'number') {
    // Past 2^53 the JSON parser has already rounded it: trusting it could skip or replay mail.
    return Number.isSafeInteger(value) && value >= 0 ? String(value) : undefined;
  }
  if (typeof value !== 'string' || !DECIMAL.test(value)) return undefined;
  return BigInt(value) <= UINT64_MAX ? value : undefined;
}

/** The later of two normalised history ids (compared as BigInt, never as text or Number). */
export function laterHistoryId(a: string, b: string): string {
  return BigInt(b) > BigInt(a) ? b : a;
}

/** Whether history id `a` is later than `b` (both normalised). */
export function isLaterHistoryId(a: string, b: string): boolean {
  return BigInt(a) > BigInt(b);
}

/**
 * Whether a push up to `pushed` can hold mail a sync has not read: not when the cursor is at or
 * past it (a replayed or late push; a sync would list nothing new). No cursor yet: it can.
 */
export function pushIsNew(pushed: string, cursor: string | undefined): boolean {
  return cursor === undefined || isLaterHistoryId(pushed, cursor);
}
