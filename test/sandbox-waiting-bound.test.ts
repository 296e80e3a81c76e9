/**
 * The bound on what the server holds for unanswered transform calls: how many may wait, and the
 * bytes of their frames in total. A lone call always fits (its body was accepted already), and
 * a call's bytes are released once, however often it is settled.
 */
import { describe, expect, it } from 'vitest';
import { createWaitingBound, fits, mayHold } from '../engine/sandbox/waiting-bound.ts';

describe('mayHold', () => {
  it.each([
    ['a lone call larger than the bound', 0, 5_000, 1_000, true],
    ['a call that fits beside the others', 400, 600, 1_000, true],
    ['a call one byte past the bound', 400, 601, 1_000, false],
  ])('%s', (_name, held, bytes, max, expected) => {
    expect(mayHold(held, bytes, max)).toBe(expected);
  });
});

describe('createWaitingBound', () => {
  it('tells whether one more call fits, by count and by bytes', () => {
    const bound = createWaitingBound({ maxWaitingCalls: 2, maxWaitingBytes: 1_000 });
    expect(fits(bound.room(1), 600)).toBe(true);
    expect(fits(bound.room(2), 600)).toBe(false);
    const release = bound.hold(600);
    expect(fits(bound.room(0), 400)).toBe(true);
    expect(fits(bound.room(0), 401)).toBe(false);
    release();
    expect(fits(bound.room(0), 1_000)).toBe(true);
  });

  it('holds bytes until released, and releases them once', () => {
    const bound = createWaitingBound({ maxWaitingBytes: 1_000 });
    const first = bound.hold(600);
    const second = bound.hold(300);
    first();
    first();
    expect(bound.room(0).heldBytes).toBe(300);
    second();
    expect(bound.room(0).heldBytes).toBe(0);
  });
});
