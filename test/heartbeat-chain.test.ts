/**
 * When one heartbeat is followed by another at once: only when it was asked
 * for now (a wake, a hook run, the operator) and it had no room for every
 * pending event. A scheduled check leaves the rest to the next check, a
 * failing agent is not asked again in a loop, and a shutdown starts no
 * further turn. The heartbeat over the real SQLite runtime store, with a
 * runner that records what it was sent.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Heartbeat } from '../engine/runtime/heartbeat.ts';
import type { Runner, RunResult } from '../engine/runtime/runners/runner.ts';
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
};

/** A heartbeat over a fresh store holding `pending` events; `answer` is the runner's reply. */
async function setup(
  pending: number,
  answer: (call: number, controller: AbortController) => RunResult,
): Promise<Setup> {
  const sent: number[] = [];
  const controller = new AbortController();
  const runner: Runner = {
    run: async (input) => {
      sent.push(input.message.split('\n').filter((line) => line.startsWith('System:')).length);
      return answer(sent.length, controller);
    },
  };
  const { heartbeat, store, close } = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: BATCH,
    signal: controller.signal,
  });
  cleanups.push(close);
  for (let i = 0; i < pending; i++)
    await store.addEvent({ sessionKey: 'main', text: `event ${i}`, source: 'wake', trusted: true });
  return { heartbeat, store, sent };
}

const ack = (): RunResult => ({ status: 'ok', reply: 'HEARTBEAT_OK' });
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
