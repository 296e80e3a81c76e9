/**
 * Deadlines of one length under one timer: each watch expires once its time
 * has passed, in the order they began, never before; a cancelled watch never
 * expires; nothing stays held once every watch ended; one failing expiry
 * does not keep the others from theirs.
 */
import { describe, expect, it, vi } from 'vitest';
import { createDeadlines } from '../engine/deadlines.ts';

describe('createDeadlines', () => {
  it('expires each watch after its time, in the order they began, and never a cancelled one', async () => {
    const deadlines = createDeadlines(40);
    const expired: Array<{ name: string; afterMs: number }> = [];
    const start = (name: string) => {
      const began = performance.now();
      return deadlines.watch(() => expired.push({ name, afterMs: performance.now() - began }));
    };
    start('a');
    const b = start('b');
    start('c');
    deadlines.cancel(b);
    await vi.waitFor(() => expect(expired).toHaveLength(2), { timeout: 5_000 });
    expect(expired.map((e) => e.name)).toEqual(['a', 'c']);
    // Never early (the timer's own rounding allowed for).
    for (const e of expired) expect(e.afterMs).toBeGreaterThanOrEqual(39);
    expect(deadlines.size).toBe(0);
  });

  it('expires a later watch on time after the one the timer was armed for was cancelled', async () => {
    // Long enough that a loaded machine's timer delays cannot pass for the fault this catches:
    // re-armed a whole limit after the cancelled head's deadline instead of at the next one.
    const limitMs = 2_000;
    const deadlines = createDeadlines(limitMs);
    const began = performance.now();
    const first = deadlines.watch(() => expect.unreachable('cancelled'));
    deadlines.cancel(first);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // The timer armed for the first is still pending: the second starts no timer of its own.
    expect(performance.now() - began).toBeLessThan(limitMs);
    const secondBegan = performance.now();
    let afterMs = 0;
    deadlines.watch(() => {
      afterMs = performance.now() - secondBegan;
    });
    await vi.waitFor(() => expect(afterMs).toBeGreaterThan(0), { timeout: 10_000, interval: 20 });
    expect(afterMs).toBeGreaterThanOrEqual(limitMs - 1);
    expect(afterMs).toBeLessThan(limitMs + 1_000);
  });

  it('keeps one timer when an expiry begins a watch of its own', () => {
    // Fake timers and clock: node's real timers may fire a little early, and a re-arm then
    // would count as a timer here.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const spy = vi.spyOn(globalThis, 'setTimeout');
    try {
      const deadlines = createDeadlines(20);
      const fired: string[] = [];
      deadlines.watch(() => {
        fired.push('first');
        deadlines.watch(() => fired.push('second'));
      });
      vi.advanceTimersByTime(20);
      expect(fired).toEqual(['first']);
      vi.advanceTimersByTime(20);
      expect(fired).toEqual(['first', 'second']);
      // One for each watch: none armed twice, none left behind.
      expect(spy.mock.calls.filter(([callback]) => callback.name === 'sweep')).toHaveLength(2);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      spy.mockRestore();
      vi.useRealTimers();
    }
  });

  it('arms again for watches begun after all the earlier ones ended', async () => {
    const deadlines = createDeadlines(20);
    const fired: number[] = [];
    deadlines.watch(() => fired.push(1));
    await vi.waitFor(() => expect(fired).toEqual([1]), { timeout: 5_000 });
    deadlines.watch(() => fired.push(2));
    await vi.waitFor(() => expect(fired).toEqual([1, 2]), { timeout: 5_000 });
  });

  it('a throwing expiry does not keep the watches due with it from expiring', async () => {
    const deadlines = createDeadlines(20);
    const fired: string[] = [];
    deadlines.watch(() => {
      throw new Error('broken');
    });
    deadlines.watch(() => fired.push('after'));
    await vi.waitFor(() => expect(fired).toEqual(['after']), { timeout: 5_000 });
    expect(deadlines.size).toBe(0);
  });

  it('holds nothing once many watches ended in time, and a second cancel does nothing', () => {
    const deadlines = createDeadlines(60_000);
    const watches = Array.from({ length: 10_000 }, () => deadlines.watch(() => undefined));
    expect(deadlines.size).toBe(10_000);
    for (const watch of watches) deadlines.cancel(watch);
    deadlines.cancel(watches[0] as (typeof watches)[number]);
    expect(deadlines.size).toBe(0);
  });
});

describe('createDeadlines with a limit past what one timer holds', () => {
  it('arms its timer within node’s limit, so nothing expires early', () => {
    // Node fires a longer timer at once: a huge configured limit would have refused every body.
    const spy = vi.spyOn(globalThis, 'setTimeout');
    try {
      const deadlines = createDeadlines(2 ** 31 + 60_000);
      const watch = deadlines.watch(() => expect.unreachable('expired early'));
      const delays = spy.mock.calls.map((call) => call[1] as number);
      expect(delays.length).toBeGreaterThan(0);
      for (const delay of delays) expect(delay).toBeLessThanOrEqual(2 ** 31 - 1);
      expect(Math.max(...delays)).toBeGreaterThan(2 ** 30);
      deadlines.cancel(watch);
    } finally {
      spy.mockRestore();
    }
  });
});
