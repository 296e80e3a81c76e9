/**
 * An abort link follows its outer signal while linked, aborts on its own,
 * and once released leaves nothing on the outer signal (a long-lived
 * signal, the worker's shutdown, must not collect one listener per run).
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkedAbort } from '../engine/linked-abort.ts';

describe('linkedAbort', () => {
  it('follows the outer signal with its reason while linked', () => {
    const outer = new AbortController();
    const link = linkedAbort(outer.signal);
    outer.abort('shutdown');
    expect(link.signal.aborted).toBe(true);
    expect(link.signal.reason).toBe('shutdown');
  });

  it('starts aborted when the outer signal already is', () => {
    const link = linkedAbort(AbortSignal.abort('gone'));
    expect(link.signal.reason).toBe('gone');
  });

  it('aborts on its own without touching the outer signal', () => {
    const outer = new AbortController();
    const link = linkedAbort(outer.signal);
    link.abort(new Error('lease lost'));
    expect(link.signal.aborted).toBe(true);
    expect(outer.signal.aborted).toBe(false);
  });

  it('once released, no longer follows and leaves no listener behind, however many links', () => {
    const outer = new AbortController();
    const links = Array.from({ length: 1_000 }, () => linkedAbort(outer.signal));
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1_000);
    for (const link of links) link.release();
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
    outer.abort('late');
    expect(links.some((link) => link.signal.aborted)).toBe(false);
  });

  it('works without an outer signal', () => {
    const link = linkedAbort(undefined);
    link.release();
    link.abort('own');
    expect(link.signal.reason).toBe('own');
  });
});
