/**
 * The cached ISO timestamp is exactly what `Date#toISOString` gives, for any
 * millisecond and in any order of calls (the cache of one second must never
 * leak into another), and outside its range it gives toISOString's own form.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isoNow, isoTime } from '../engine/iso-time.ts';

const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

describe('isoTime', () => {
  it('equals toISOString for any millisecond, in any order of calls', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: LAST_MS }), { minLength: 1 }), (times) => {
        for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 500 },
    );
  });

  it('equals toISOString across neighbouring milliseconds and second boundaries', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: LAST_MS - 5_000 }), (start) => {
        for (let ms = start - 1; ms < start + 2_100; ms += 7)
          expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }),
      { numRuns: 50 },
    );
  });

  it('drops a fraction of a millisecond, as a Date does', () => {
    expect(isoTime(1_764_400_000_123.9)).toBe(new Date(1_764_400_000_123.9).toISOString());
  });

  it('gives toISOString its own form outside 1970-9999', () => {
    for (const ms of [-1, -86_400_000, LAST_MS + 1, 8.64e15])
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });

  it('isoNow is now', () => {
    const before = Date.now();
    const now = Date.parse(isoNow());
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
