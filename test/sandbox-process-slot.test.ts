/**
 * The choices over the transform processes' places: the back-off before a replacement after
 * starts that failed in a row, and which ready process a queued call goes to.
 */
import { describe, expect, it } from 'vitest';
import {
  CALLS_PER_PROCESS,
  createSlot,
  leastBusy,
  restartDelay,
  type Slot,
} from '../engine/sandbox/process-slot.ts';

describe('restartDelay', () => {
  it.each([
    ['after a process that had loaded', 0, 0],
    ['after one failed start', 1, 250],
    ['after three failed starts in a row', 3, 1_000],
    ['after many failed starts in a row (the cap)', 50, 5_000],
  ])('%s', (_name, failedStarts, expected) => {
    expect(restartDelay(failedStarts)).toBe(expected);
  });
});

describe('leastBusy', () => {
  const slot = (state: Slot<number>['state'], calls: number): Slot<number> => {
    const s = createSlot<number>();
    s.state = state;
    for (let i = 0; i < calls; i++) s.inflight.set(i, i);
    return s;
  };

  it.each([
    ['the ready process with fewest calls', [slot('ready', 3), slot('ready', 1)], 0, 1],
    ['on a tie, the first from the turn', [slot('ready', 2), slot('ready', 2)], 1, 1],
    ['never a process still starting', [slot('starting', 0), slot('ready', 5)], 0, 1],
    ['never a process at its share', [slot('ready', CALLS_PER_PROCESS), slot('ready', 9)], 0, 1],
  ])('%s', (_name, slots, turn, expected) => {
    expect(leastBusy(slots, turn)).toBe(slots[expected]);
  });

  it.each([
    ['no process ready', [slot('idle', 0), slot('stopping', 0)]],
    ['every ready process at its share', [slot('ready', CALLS_PER_PROCESS)]],
  ])('none when %s', (_name, slots) => {
    expect(leastBusy(slots, 0)).toBeUndefined();
  });
});
