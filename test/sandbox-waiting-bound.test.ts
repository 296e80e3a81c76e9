/**
 * The bound on what the server holds for unanswered transform calls: how many may wait, and the
 * bytes of their frames in total. A lone call always fits (its body was accepted already), and
 * a call's bytes are released once, however often it is settled.
 */
import { describe, expect, it } from 'vitest';
import { createWaitingBound, mayHold } from '../engine/sandbox/waiting-bound.ts';

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
  it('refuses a call past maxWaitingCalls', () => {
    const bound = createWaitingBound({ maxWaitingCalls: 2 });
    expect(bound.mayWait(1)).toBe(true);
    expect(bound.mayWait(2)).toBe(false);
  });

  it('holds bytes until released, and releases them once', () => {
    const bound = createWaitingBound({ maxWaitingBytes: 1_000 });
    const first = bound.hold(600);
    expect(first).toBeTypeOf('function');
    expect(bound.hold(600)).toBeUndefined();
    first?.();
    first?.();
    const second = bound.hold(600);
    expect(second).toBeTypeOf('function');
    expect(bound.hold(600)).toBeUndefined();
  });
});
