/**
 * chargeKill: which calls a killed transform process held pay for the kill. A missed deadline
 * charges only the calls of the late call's module (the others were waiting behind it); a
 * process that died on its own charges every call it held. A call charged CHARGES_PER_CALL
 * times fails instead of being sent again.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { CHARGES_PER_CALL, chargeKill, type Kill } from '../engine/sandbox/kill-charges.ts';

const timeoutOf = (key: string): Kill => ({ cause: 'timeout', key });
const crash: Kill = { cause: 'crash' };

describe('chargeKill', () => {
  describe('sent again', () => {
    it.each([
      ['another module, on a missed deadline', timeoutOf('a'), 'b', 0, 0],
      ['another module, already charged once, on a missed deadline', timeoutOf('a'), 'b', 1, 1],
      ['the late module, never charged before', timeoutOf('a'), 'a', 0, 1],
      ['any module, never charged before, on a crash', crash, 'b', 0, 1],
    ])('%s', (_name, kill, key, before, after) => {
      expect(chargeKill(kill, { key, charged: before })).toEqual({ charged: after, again: true });
    });
  });

  describe('failed', () => {
    it.each([
      ['the late module, charged once before', timeoutOf('a'), 'a', 1, 2],
      ['any module, charged once before, on a crash', crash, 'b', 1, 2],
    ])('%s', (_name, kill, key, before, after) => {
      expect(chargeKill(kill, { key, charged: before })).toEqual({ charged: after, again: false });
    });
  });

  test.prop([
    fc.oneof(fc.constant(crash), fc.constantFrom('a', 'b').map(timeoutOf)),
    fc.constantFrom('a', 'b'),
    fc.integer({ min: 0, max: CHARGES_PER_CALL - 1 }),
  ])(
    'charges at most one kill, and sends a call again while under the bound',
    (kill, key, before) => {
      const { charged, again } = chargeKill(kill, { key, charged: before });
      expect(charged - before).toBe(kill.cause === 'crash' || kill.key === key ? 1 : 0);
      expect(again).toBe(charged < CHARGES_PER_CALL);
    },
  );
});
