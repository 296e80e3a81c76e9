/**
 * Reading fields of a parsed Google answer without trusting its shape: own
 * properties of plain objects only, so an answer's `__proto__` or an
 * inherited name never reads as a field.
 */

/** A plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own property of a plain object, else undefined. */
export function field(value: unknown, key: string): unknown {
  return isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

/** An answer that does not have the documented shape; `path` names the field. */
export class InvalidAnswer extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`);
    this.name = 'InvalidAnswer';
    this.path = path;
  }
}

// Gmail's message, thread and label ids are short tokens; bounded and URL-safe by shape.
const ID_SHAPE = /^[A-Za-z0-9_-]{1,256}$/;

/** Whether `value` has the shape of a Gmail id. */
export function isGmailId(value: unknown): value is string {
  return typeof value === 'string' && ID_SHAPE.test(value);
}

/** A Gmail id at `path`, or InvalidAnswer. */
export function readId(value: unknown, path: string): string {
  if (!isGmailId(value)) throw new InvalidAnswer(path, 'not an id');
  return value;
}

/** A string at `path` of at most `max` characters, or InvalidAnswer; `fallback` when absent. */
export function readString(value: unknown, path: string, max: number, fallback?: string): string {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string') throw new InvalidAnswer(path, 'not a string');
  if (value.length > max) throw new InvalidAnswer(path, `longer than ${max}`);
  return value;
}

/** An array at `path` of at most `max` items (empty when absent), or InvalidAnswer. */
export function readArray(value: unknown, path: string, max: number): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidAnswer(path, 'not an array');
  if (value.length > max) throw new InvalidAnswer(path, `more than ${max} items`);
  return value;
}

// Epoch milliseconds: an int64 that must still be a safe integer here.
const EPOCH_MS = /^\d{1,16}$/;

// Google sends int64 fields as decimal strings; numbers are tolerated when safe.
/** Epoch milliseconds at `path` (an int64 string, or a safe number), or InvalidAnswer. */
export function readEpochMs(value: unknown, path: string): number {
  const ms = typeof value === 'string' && EPOCH_MS.test(value) ? Number(value) : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new InvalidAnswer(path, 'not epoch milliseconds');
  }
  return ms;
}
