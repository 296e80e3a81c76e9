/**
 * chargeKill: which calls a killed transform process held pay for the kill. The call the process
 * was running (the late one, or the oldest when it died on its own) names the suspect module:
 * its calls are charged, and one charged CHARGES_PER_CALL times fails instead of being sent
 * again. A crash also counts against every call present, which fails after CRASHES_PER_CALL.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  CHARGES_PER_CALL,
  CRASHES_PER_CALL,
  chargeKill,
  type Kill,
} from '../engine/sandbox/kill-charges.ts';

const timeoutOf = (key: string): Kill => ({ cause: 'timeout', key });
const crashOf = (key: string): Kill => ({ cause: 'crash', key });
const call = (key: string, charged: number, crashes = 0) => ({ key, charged, crashes });

describe('chargeKill', () => {
  describe('sent again', () => {
    it.each([
      ['another module, on a missed deadline', timeoutOf('a'), call('b', 0), 0, 0],
      [
        'another module, already charged once, on a missed deadline',
        timeoutOf('a'),
        call('b', 1),
        1,
        0,
      ],
      ['the late module, never charged before', timeoutOf('a'), call('a', 0), 1, 0],
      ['the crashing module, never charged before', crashOf('a'), call('a', 0), 1, 1],
      ['another module, on its second crash', crashOf('a'), call('b', 0, 1), 0, 2],
      [
        'another module, one crash under the bound',
        crashOf('a'),
        call('b', 0, CRASHES_PER_CALL - 2),
        0,
        CRASHES_PER_CALL - 1,
      ],
    ])('%s', (_name, kill, before, charged, crashes) => {
      expect(chargeKill(kill, before)).toEqual({ charged, crashes, again: true });
    });
  });

  describe('failed', () => {
    it.each([
      ['the late module, charged once before', timeoutOf('a'), call('a', 1), 2, 0],
      ['the crashing module, charged once before', crashOf('a'), call('a', 1, 1), 2, 2],
      [
        'another module, at its last allowed crash',
        crashOf('a'),
        call('b', 0, CRASHES_PER_CALL - 1),
        0,
        CRASHES_PER_CALL,
      ],
    ])('%s', (_name, kill, before, charged, crashes) => {
      expect(chargeKill(kill, before)).toEqual({ charged, crashes, again: false });
    });
  });

  test.prop([
    fc.constantFrom('timeout' as const, 'crash' as const),
    fc.constantFrom('a', 'b'),
    fc.constantFrom('a', 'b'),
    fc.integer({ min: 0, max: CHARGES_PER_CALL - 1 }),
    fc.integer({ min: 0, max: CRASHES_PER_CALL - 1 }),
  ])(
    'charges the suspect module one kill and counts crashes for all; sent again while under both bounds',
    (cause, suspect, key, charged, crashes) => {
      const after = chargeKill({ cause, key: suspect }, { key, charged, crashes });
      expect(after.charged - charged).toBe(key === suspect ? 1 : 0);
      expect(after.crashes - crashes).toBe(cause === 'crash' ? 1 : 0);
      expect(after.again).toBe(
        after.charged < CHARGES_PER_CALL && after.crashes < CRASHES_PER_CALL,
      );
    },
  );
});
