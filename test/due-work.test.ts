/**
 * Store-kept work run by id (engine/runtime/due-work.ts), over a stand-in
 * store: the sweep reads only while work may be due, a read that began
 * before new work was marked does not stop the next sweep, a sweep asked
 * for during a read reads again after it, one run per piece at a time,
 * and stop waits for what is running.
 */
import { describe, expect, it } from 'vitest';
import { createDueWork } from '../engine/runtime/due-work.ts';
import { waitFor } from './helpers/runtime.ts';

function setup(pieces: Array<{ id: string; atMs: number }> = []) {
  const reads: Array<() => void> = [];
  let holdReads = false;
  const ran: string[] = [];
  let release: (() => void) | undefined;
  let holdRuns = false;
  let halted = false;
  const work = createDueWork({
    async attempt(id) {
      ran.push(id);
      if (holdRuns) await new Promise<void>((resolve) => (release = resolve));
    },
    async pending(limit) {
      // What the store holds when the read starts; it answers later.
      const page = pieces.splice(0, limit);
      if (holdReads) await new Promise<void>((resolve) => reads.push(resolve));
      return page;
    },
    halted: () => halted,
    failed: () => undefined,
  });
  return {
    work,
    ran,
    pieces,
    holdReads: (on: boolean) => {
      holdReads = on;
    },
    releaseRead: () => reads.shift()?.(),
    pendingReads: () => reads.length,
    holdRuns: (on: boolean) => {
      holdRuns = on;
    },
    releaseRun: () => release?.(),
    halt: () => {
      halted = true;
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('due work', () => {
  it('reads at first, then only after something was marked', async () => {
    let reads = 0;
    const work = createDueWork({
      attempt: async () => undefined,
      async pending() {
        reads++;
        return [];
      },
      halted: () => false,
      failed: () => undefined,
    });
    await work.sweep();
    await work.sweep();
    expect(reads).toBe(1);
    work.mark();
    await work.sweep();
    expect(reads).toBe(2);
    await work.stop();
  });

  it('a read that began before a mark does not stop the next sweep', async () => {
    const t = setup();
    t.holdReads(true);
    const first = t.work.sweep();
    await turn();
    expect(t.pendingReads()).toBe(1);
    // New work while the read (which will find nothing) is in flight.
    t.work.mark();
    t.releaseRead();
    await first;
    t.holdReads(false);
    t.pieces.push({ id: 'late', atMs: 0 });
    await t.work.sweep();
    await waitFor('the piece to run', () => t.ran.length > 0);
    await t.work.stop();
    expect(t.ran).toEqual(['late']);
  });

  it('a sweep asked for (always) during a read reads again after it', async () => {
    const t = setup();
    t.holdReads(true);
    const first = t.work.sweep(true);
    await turn();
    t.pieces.push({ id: 'written meanwhile', atMs: 0 });
    const second = t.work.sweep(true);
    t.holdReads(false);
    t.releaseRead();
    await Promise.all([first, second]);
    // The read queued behind the first one finds the piece and arms it.
    await waitFor('the piece to run', () => t.ran.length > 0);
    expect(t.ran).toEqual(['written meanwhile']);
    await t.work.stop();
  });

  it('runs a piece once at a time, and stop waits for it', async () => {
    const t = setup();
    t.holdRuns(true);
    const one = t.work.run('a');
    const two = t.work.run('a');
    await turn();
    expect(t.ran).toEqual(['a']);
    let stopped = false;
    const stopping = t.work.stop().then(() => {
      stopped = true;
    });
    await turn();
    expect(stopped).toBe(false);
    t.releaseRun();
    await Promise.all([one, two, stopping]);
    expect(stopped).toBe(true);
  });

  it('arms nothing once halted', async () => {
    const t = setup([{ id: 'a', atMs: 0 }]);
    t.halt();
    await t.work.sweep(true);
    t.work.at('b', 0);
    // A piece run at once afterwards shows that no timer was left to run before it.
    const probe = setup();
    probe.work.at('c', 0);
    await waitFor('a timer armed after', () => probe.ran.length > 0);
    await probe.work.stop();
    expect(t.ran).toEqual([]);
    await t.work.stop();
  });

  it('starts a bounded number of runs at once when many pieces are due, and runs them all', async () => {
    let running = 0;
    let peak = 0;
    let done = 0;
    const pieces = Array.from({ length: 40 }, (_, i) => ({ id: `p${i}`, atMs: 0 }));
    const work = createDueWork({
      async attempt() {
        running++;
        peak = Math.max(peak, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        done++;
      },
      pending: async (limit) => pieces.splice(0, limit),
      halted: () => false,
      failed: () => undefined,
    });
    await work.sweep();
    await waitFor('every piece to run', () => done === 40);
    await work.stop();
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(8);
  });
});
