/**
 * Attack: a refused wake is being narrowed down when a scheduled check comes
 * during the narrowing's backoff and finds the runner unreachable (a 503).
 * The check took the narrowing's step (its timer was cleared as the check
 * began), but its turn did not happen, and a scheduled check is not asked
 * again: the narrowing waited for the next check or wake, and the events
 * behind the refused one with it. The step is still due after such a turn.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { RunResult, Runner } from '../engine/runtime/runners/runner.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';
import { waitFor } from './helpers/runtime.ts';

const POISON = 'zq-refused-by-the-provider';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it('a scheduled check whose runner is unreachable does not drop the narrowing', async () => {
  const calls: string[] = [];
  let unreachable = false;
  const runner: Runner = {
    run: async (input): Promise<RunResult> => {
      calls.push(input.message);
      if (unreachable) return { status: 'retry', reason: 'HTTP 503' };
      return input.message.includes(POISON)
        ? { status: 'error', reason: 'HTTP 400: content filter' }
        : { status: 'ok', reply: 'HEARTBEAT_OK' };
    },
  };
  // The narrowing's first step waits 150 to 300 ms: the scheduled check comes before it.
  const { heartbeat, store, close } = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 10,
    retry: { maxAttempts: 3, baseDelayMs: 300, maxDelayMs: 300 },
  });
  cleanups.push(async () => {
    await heartbeat.stop();
    close();
  });
  const add = (text: string) =>
    store.addEvent({ sessionKey: 'main', text, source: 'wake', trusted: true });
  await add(`${POISON} please`);
  for (let i = 0; i < 3; i++) await add(`ordinary event ${i}`);
  heartbeat.requestNow('wake');
  await waitFor('the refused heartbeat', () => calls.length === 1);
  await heartbeat.idle();
  unreachable = true;
  heartbeat.requestNow('periodic');
  await waitFor('the scheduled check', () => calls.length === 2);
  await heartbeat.idle();
  unreachable = false;
  await waitFor(
    'every event consumed or set aside',
    async () => (await store.pendingSizes('main', 100)).length === 0,
    5_000,
  );
  const events = await store.events('main', 100);
  const heartbeats = new Map((await store.heartbeats(100)).map((beat) => [beat.id, beat]));
  for (const event of events) {
    const state = heartbeats.get(String(event.consumedBy))?.state;
    expect(state, event.text).toBe(event.text.includes(POISON) ? 'failed' : 'done');
  }
});
