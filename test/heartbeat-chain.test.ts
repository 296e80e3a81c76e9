/**
 * When one heartbeat is followed by another at once: only when it was asked
 * for now (a wake, a hook run, the operator) and it had no room for every
 * pending event. A scheduled check leaves the rest to the next check, a
 * failing agent is not asked again in a loop, and a shutdown starts no
 * further turn. Requests for a heartbeat now within the coalescing window of
 * the last one's start wait for its end and share one turn. The heartbeat
 * over the real SQLite runtime store, with a runner that records what it
 * was sent.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Heartbeat } from '../engine/runtime/heartbeat.ts';
import type { Runner, RunResult } from '../engine/runtime/runners/runner.ts';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import type { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';

const BATCH = 10;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

type Setup = {
  heartbeat: Heartbeat;
  store: SqliteRuntimeStore;
  /** How many `System:` lines each heartbeat the runner got carried, in order. */
  sent: number[];
  /** When each heartbeat reached the runner (performance.now()). */
  startedAt: number[];
  /** The store's data directory. */
  dir: string;
};

/** A heartbeat over a fresh store holding `pending` events; `answer` is the runner's reply. */
async function setup(
  pending: number,
  answer: (
    call: number,
    controller: AbortController,
    store: SqliteRuntimeStore,
  ) => RunResult | Promise<RunResult>,
  coalesceMs = 0,
  lead: { leading?: () => boolean; forward?: (reason: string) => void } = {},
): Promise<Setup & { controller: AbortController }> {
  const sent: number[] = [];
  const startedAt: number[] = [];
  const controller = new AbortController();
  const runner: Runner = {
    run: async (input) => {
      startedAt.push(performance.now());
      sent.push(input.message.split('\n').filter((line) => line.startsWith('System:')).length);
      return answer(sent.length, controller, opened.store);
    },
  };
  const opened = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: BATCH,
    coalesceMs,
    signal: controller.signal,
    ...lead,
  });
  const { heartbeat, store, dir, close } = opened;
  cleanups.push(close);
  for (let i = 0; i < pending; i++)
    await store.addEvent({ sessionKey: 'main', text: `event ${i}`, source: 'wake', trusted: true });
  return { heartbeat, store, sent, startedAt, controller, dir };
}

const ack = (): RunResult => ({ status: 'ok', reply: 'HEARTBEAT_OK' });
const addEvents = async (store: SqliteRuntimeStore, count: number) => {
  for (let i = 0; i < count; i++)
    await store.addEvent({ sessionKey: 'main', text: `later ${i}`, source: 'wake', trusted: true });
};
// Far longer than any test: a heartbeat that waited for it never starts within one.
const NEVER = 3_600_000;
/** Whether `promise` settles within `ms` (a heartbeat held by the window would not). */
const settlesWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms)),
  ]);
const stillPending = async (store: SqliteRuntimeStore) =>
  (await store.pendingEvents('main', 1000)).length;

describe('a heartbeat followed by another at once', () => {
  it('asked for now with more than a batch pending: heartbeats follow until none is pending', async () => {
    const { heartbeat, store, sent } = await setup(2 * BATCH + 5, ack);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    expect(sent).toEqual([BATCH, BATCH, 5]);
    expect(await stillPending(store)).toBe(0);
  });

  it('a scheduled check with more than a batch pending runs once; the rest wait for the next check', async () => {
    const { heartbeat, store, sent } = await setup(2 * BATCH + 5, ack);
    heartbeat.requestNow('periodic');
    await heartbeat.idle();
    expect(sent).toEqual([BATCH]);
    expect(await stillPending(store)).toBe(BATCH + 5);
  });

  it('a failing agent with more than a batch pending is asked once, its events left pending', async () => {
    const { heartbeat, store, sent } = await setup(2 * BATCH + 5, () => ({
      status: 'error',
      reason: 'the agent is down',
    }));
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    expect(sent).toEqual([BATCH]);
    expect(await stillPending(store)).toBe(2 * BATCH + 5);
  });

  it('a shutdown while a heartbeat of a chain runs starts no further turn', async () => {
    const { heartbeat, sent } = await setup(3 * BATCH, (_call, controller) => {
      // The runtime aborts its signal first, then stops the heartbeat.
      controller.abort();
      return ack();
    });
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await heartbeat.stop();
    expect(sent).toEqual([BATCH]);
  });
});

describe('the coalescing window', () => {
  it('a flood of requests for a heartbeat now after one started waits for the window and is one turn', async () => {
    const window = 300;
    const { heartbeat, store, sent, startedAt } = await setup(1, ack, window);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    for (let i = 0; i < 5; i++) {
      await addEvents(store, 1);
      heartbeat.requestNow('hook');
    }
    await heartbeat.idle();
    expect(sent).toEqual([1, 5]);
    // The second turn began at the window's end, not at once. The runner sees each start after
    // the heartbeat's own store reads, slower the first time (statements prepared then), and a
    // timer's millisecond rounding can fire it a little early: a few ms of slack, not the window.
    expect((startedAt[1] ?? 0) - (startedAt[0] ?? 0)).toBeGreaterThanOrEqual(window - 20);
    expect(await stillPending(store)).toBe(0);
  });

  it('the first request after a quiet spell starts at once', async () => {
    const { heartbeat, sent } = await setup(2, ack, NEVER);
    heartbeat.requestNow('wake');
    expect(await settlesWithin(heartbeat.idle(), 2_000)).toBe(true);
    expect(sent).toEqual([2]);
  });

  it('requests made while a heartbeat runs get one more turn, after the window', async () => {
    const window = 200;
    const first = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const { heartbeat, store, sent, startedAt } = await setup(
      1,
      async (call) => {
        if (call === 1) {
          first.resolve();
          await release.promise;
        }
        return ack();
      },
      window,
    );
    heartbeat.requestNow('wake');
    await first.promise;
    await addEvents(store, 3);
    for (let i = 0; i < 3; i++) heartbeat.requestNow('hook');
    release.resolve();
    await heartbeat.idle();
    expect(sent).toEqual([1, 3]);
    expect((startedAt[1] ?? 0) - (startedAt[0] ?? 0)).toBeGreaterThanOrEqual(window - 20);
  });

  it('a scheduled check is not held back by the window', async () => {
    const { heartbeat, store, sent } = await setup(1, ack, NEVER);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await addEvents(store, 2);
    heartbeat.requestNow('periodic');
    expect(await settlesWithin(heartbeat.idle(), 2_000)).toBe(true);
    expect(sent).toEqual([1, 2]);
  });

  it('a scheduled check starts at once a heartbeat that was waiting for the window', async () => {
    const { heartbeat, store, sent } = await setup(1, ack, NEVER);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await addEvents(store, 2);
    heartbeat.requestNow('hook');
    heartbeat.requestNow('periodic');
    expect(await settlesWithin(heartbeat.idle(), 2_000)).toBe(true);
    expect(sent).toEqual([1, 2]);
  });

  it('a backlog bigger than a batch is still followed at once, whatever the window', async () => {
    const { heartbeat, store, sent } = await setup(2 * BATCH + 5, ack, NEVER);
    heartbeat.requestNow('wake');
    expect(await settlesWithin(heartbeat.idle(), 2_000)).toBe(true);
    expect(sent).toEqual([BATCH, BATCH, 5]);
    expect(await stillPending(store)).toBe(0);
  });

  it('a heartbeat waiting for its window does not start after shutdown began', async () => {
    const { heartbeat, store, sent } = await setup(1, ack, NEVER);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await addEvents(store, 1);
    heartbeat.requestNow('wake');
    await heartbeat.stop();
    expect(await settlesWithin(heartbeat.idle(), 2_000)).toBe(true);
    expect(sent).toEqual([1]);
    expect(await stillPending(store)).toBe(1);
  });

  it('a heartbeat waiting for its window does not start once the runtime’s signal is aborted', async () => {
    const window = 200;
    const { heartbeat, store, sent, controller } = await setup(1, ack, window);
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await addEvents(store, 1);
    heartbeat.requestNow('wake');
    // Shutdown aborts the signal first and stops the heartbeat only after the worker drained.
    controller.abort();
    await heartbeat.idle();
    expect(sent).toEqual([1]);
    expect(await stillPending(store)).toBe(1);
  });

  it('a heartbeat waiting for its window on an instance that lost the lead goes to the leader', async () => {
    const window = 200;
    let leads = true;
    const forwarded: string[] = [];
    const { heartbeat, store, sent } = await setup(1, ack, window, {
      leading: () => leads,
      forward: (reason) => forwarded.push(reason),
    });
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    await addEvents(store, 1);
    heartbeat.requestNow('hook');
    leads = false;
    await heartbeat.idle();
    expect(sent).toEqual([1]);
    expect(forwarded).toEqual(['hook']);
  });

  it('a heartbeat failed by a new leader while it ran: its end changes nothing, its reply is not delivered nor kept in history', async () => {
    const { heartbeat, store, sent, dir } = await setup(2, async (_call, _controller, runStore) => {
      // Another instance took the lead meanwhile and failed this heartbeat.
      await runStore.recoverHeartbeats();
      return { status: 'ok', reply: 'Attention: the deploy failed.' };
    });
    heartbeat.requestNow('wake');
    await heartbeat.idle();
    expect(sent).toEqual([2]);
    // Still pending, for the heartbeat the new leader runs; and no delivery was recorded.
    expect(await stillPending(store)).toBe(2);
    // Nor in the heartbeat's history: the new leader's heartbeat must not read it as answered.
    expect(
      await store.history({ agentId: 'main', sessionKey: 'main', kind: 'heartbeat' }, 10),
    ).toEqual([]);
    const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
    try {
      expect(
        db.prepare("SELECT count(*) AS n FROM deliveries WHERE source = 'heartbeat'").get(),
      ).toEqual({ n: 0 });
    } finally {
      db.close();
    }
  });
});
