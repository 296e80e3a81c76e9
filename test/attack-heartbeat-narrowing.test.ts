/**
 * Attacks on the narrowing that finds an event the runner refuses
 * (engine/runtime/event-isolation.ts, heartbeat-follow-up.ts), over a real
 * SQLite store and a runner that refuses any turn carrying the poisoned text:
 * - a few refused wakes at the head of the queue: each was found by halving,
 *   but the backoff grew over the refusals of all of them in a row (only an
 *   answered turn started it over, and none comes while refused events lead
 *   every batch): at the default policy the third was found after most of an
 *   hour, the ordinary events behind them waiting as long. A refused event
 *   found now ends its narrowing: the next one's backoff starts over;
 * - a scheduled check during the narrowing's backoff whose runner is
 *   unreachable: it took the narrowing's step (its timer cleared as it
 *   began), its turn did not happen, and a scheduled check is not asked
 *   again, so the narrowing waited for the next check or wake. The step is
 *   still due after such a turn.
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

/** A heartbeat whose runner refuses the poisoned text, or answers 503 while `down` says so. */
function setup(
  maxEvents: number,
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number },
) {
  const calls: string[] = [];
  const state = { down: false };
  const runner: Runner = {
    run: async (input): Promise<RunResult> => {
      calls.push(input.message);
      if (state.down) return { status: 'retry', reason: 'HTTP 503' };
      return input.message.includes(POISON)
        ? { status: 'error', reason: 'HTTP 400: content filter' }
        : { status: 'ok', reply: 'HEARTBEAT_OK' };
    },
  };
  const opened = testHeartbeat({ runner, logger: pino({ level: 'silent' }), maxEvents, retry });
  cleanups.push(async () => {
    await opened.heartbeat.stop();
    opened.close();
  });
  const { store } = opened;
  return {
    ...opened,
    calls,
    state,
    add: (text: string) =>
      store.addEvent({ sessionKey: 'main', text, source: 'wake', trusted: true }),
    /** Every event consumed by an answered heartbeat, the poisoned ones set aside by a failed one. */
    async settled() {
      await waitFor(
        'every event consumed or set aside',
        async () => (await store.pendingSizes('main', 100)).length === 0,
        8_000,
      );
      const events = await store.events('main', 100);
      const heartbeats = new Map((await store.heartbeats(100)).map((beat) => [beat.id, beat]));
      for (const event of events) {
        const state = heartbeats.get(String(event.consumedBy))?.state;
        expect(state, event.text).toBe(event.text.includes(POISON) ? 'failed' : 'done');
      }
    },
  };
}

it('refused wakes at the head of the queue do not hold the events behind them', async () => {
  // The backoff doubles from 20 ms: 12 refusals in a row wait 20 s and more (half of 20 ms ×
  // 4095 at least), 4 at a time a fraction of a second.
  const s = setup(8, { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 60_000 });
  for (let i = 0; i < 3; i++) await s.add(`${POISON} ${i}`);
  for (let i = 0; i < 5; i++) await s.add(`ordinary event ${i}`);
  s.heartbeat.requestNow('wake');
  await s.settled();
});

it('a scheduled check whose runner is unreachable does not drop the narrowing', async () => {
  // The narrowing's first step waits 150 to 300 ms: the scheduled check comes before it.
  const s = setup(10, { maxAttempts: 3, baseDelayMs: 300, maxDelayMs: 300 });
  await s.add(`${POISON} please`);
  for (let i = 0; i < 3; i++) await s.add(`ordinary event ${i}`);
  s.heartbeat.requestNow('wake');
  await waitFor('the refused heartbeat', () => s.calls.length === 1);
  await s.heartbeat.idle();
  s.state.down = true;
  s.heartbeat.requestNow('periodic');
  await waitFor('the scheduled check', () => s.calls.length === 2);
  await s.heartbeat.idle();
  s.state.down = false;
  await s.settled();
});
