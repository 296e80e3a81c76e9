/**
 * retryWaitMs: how long a mail sync that could not finish waits before the next try. What
 * Gmail asked for is kept when it is longer than the floor; the floor doubles with each failure
 * in a row, up to its cap, so `Retry-After: 0` never sends the sync round again at once.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { RETRY_FLOOR_MAX_MS, RETRY_FLOOR_MS, retryWaitMs } from '../engine/gmail/retry-wait.ts';

describe('retryWaitMs', () => {
  it.each([
    ['Retry-After: 0, the first failure', 0, 1, RETRY_FLOOR_MS],
    ['Retry-After: 0, the third failure in a row', 0, 3, 4 * RETRY_FLOOR_MS],
    ['Retry-After: 0, the hundredth failure in a row', 0, 100, RETRY_FLOOR_MAX_MS],
    ['a Retry-After longer than the floor', 30_000, 1, 30_000],
    ['a failure without Retry-After (five minutes)', 300_000, 8, 300_000],
    ['a negative wait (a clock gone back)', -5_000, 1, RETRY_FLOOR_MS],
    ['not a number', Number.NaN, 2, 2 * RETRY_FLOOR_MS],
  ])('%s', (_name, asked, failures, expected) => {
    expect(retryWaitMs(asked, failures)).toBe(expected);
  });

  test.prop([fc.double({ noNaN: true }), fc.integer({ min: 1, max: 1_000 })])(
    'never less than the floor nor than what was asked, never more than both',
    (asked, failures) => {
      const wait = retryWaitMs(asked, failures);
      expect(wait).toBeGreaterThanOrEqual(RETRY_FLOOR_MS);
      if (Number.isFinite(asked)) {
        expect(wait).toBeGreaterThanOrEqual(asked);
        expect(wait).toBeLessThanOrEqual(Math.max(asked, RETRY_FLOOR_MAX_MS));
      }
      expect(retryWaitMs(asked, failures + 1)).toBeGreaterThanOrEqual(wait);
    },
  );
});
