/**
 * When the worker looks at its store where nothing polls it (the embedded
 * store, whose command line rings a doorbell): a look that failed (a busy
 * or locked file) is tried again after a growing delay, and a request a
 * command wrote before the worker started is taken at start. The real
 * action worker over the real SQLite store; the failures come from a
 * wrapper that makes the store's claim throw.
 */
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import type { RuntimeStore } from '../engine/runtime/runtime-store.ts';
import { startStoreWatch } from '../engine/runtime/store-watch.ts';
import { waitFor } from './helpers/runtime.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { testWorker } from './helpers/worker.ts';
import { agentAction } from './runtime-store-contract.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A worker over the real store, seen through `wrap`; records runs and operator requests. */
async function setup(wrap: (real: RuntimeStore) => RuntimeStore = (real) => real) {
  const stores = await openSqliteStores('hookgate-worker-looks-');
  const started: string[] = [];
  const requests: string[] = [];
  const runner: Runner = {
    async run(run) {
      started.push(run.message);
      return { status: 'ok', reply: 'ok' };
    },
  };
  // pollMs is only the first delay after a failed look: nothing polls this store.
  const worker = testWorker(wrap(stores.runtime), runner, {
    workspace: stores.dir,
    concurrency: 2,
    pollMs: 50,
    onRequest: (kind) => requests.push(kind),
  });
  cleanups.push(async () => {
    await worker.stop();
    await stores.close();
  });
  return { stores, worker, started, requests };
}

/** The store, whose claim passes throw (as a locked file makes them) while `failing()` says so. */
function lockedWhile(failing: () => boolean) {
  return (real: RuntimeStore): RuntimeStore =>
    new Proxy(real, {
      get(target, key) {
        if (key === 'claimHeads' && failing())
          return async () => {
            throw new Error('database is locked');
          };
        const value = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
}

describe('the worker where nothing polls its store', () => {
  it('a claim pass that failed (a locked store) is tried again without a ring or a poll', async () => {
    let failures = 0;
    const { stores, worker, started } = await setup(lockedWhile(() => ++failures <= 3));
    await worker.start();
    await stores.accept([agentAction('hook:locked', 'after the lock')]);
    worker.kick();
    await waitFor('the run to start once the store answers', () => started.length === 1);
    expect(started).toEqual(['wrapped: after the lock']);
    expect(failures).toBeGreaterThan(3);
  });

  it('a request a command wrote before the worker started is taken at start', async () => {
    const { stores, worker, requests } = await setup();
    await stores.runtime.request('reload');
    await worker.start();
    await waitFor('the request to be taken', () => requests.length === 1);
    expect(requests).toEqual(['reload']);
  });
});

describe('looking again after a failure', () => {
  it('waits the poll interval, then twice as long each time, and starts over after a success', () => {
    vi.useFakeTimers();
    cleanups.push(() => {
      vi.useRealTimers();
    });
    let looks = 0;
    const watch = startStoreWatch({
      store: { watchOutside: () => () => undefined },
      pollMs: 40,
      look: () => looks++,
      pass: () => undefined,
      logger: pino({ level: 'silent' }),
    });
    cleanups.push(() => watch.stop());
    /** Fail (twice: one look is due either way); the look comes after exactly `ms`. */
    const failedLookAfter = (ms: number) => {
      const before = looks;
      watch.failed('session heads');
      watch.failed('session heads');
      vi.advanceTimersByTime(ms - 1);
      expect(looks).toBe(before);
      vi.advanceTimersByTime(1);
      expect(looks).toBe(before + 1);
    };
    failedLookAfter(40);
    failedLookAfter(80);
    failedLookAfter(160);
    // Another stage going through does not end the failing one's growing delay.
    watch.succeeded('requests');
    failedLookAfter(320);
    watch.succeeded('session heads');
    failedLookAfter(40);
    // Capped: a store that keeps failing is looked at every 30 s.
    for (const ms of [80, 160, 320, 640, 1_280, 2_560, 5_120, 10_240, 20_480, 30_000, 30_000])
      failedLookAfter(ms);
    watch.stop();
    watch.failed('session heads');
    vi.advanceTimersByTime(60_000);
    expect(looks).toBe(16);
  });
});
