/**
 * Attack: a few wakes the provider always refuses, posted first, ahead of
 * the session's ordinary events. Each was found by halving, but the
 * narrowing's backoff grew over the refusals of all of them in a row (only
 * an answered turn started it over, and none comes while the refused events
 * lead every batch): at the default retry policy the third was found after
 * most of an hour, and the ordinary events behind them waited as long. A
 * refused event found ends its narrowing: the next one's backoff starts over.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';
import { waitFor } from './helpers/runtime.ts';

const POISON = 'zq-refused-by-the-provider';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it('refused wakes at the head of the queue do not hold the events behind them', async () => {
  const runner: Runner = {
    run: async (input) =>
      input.message.includes(POISON)
        ? { status: 'error', reason: 'HTTP 400: content filter' }
        : { status: 'ok', reply: 'HEARTBEAT_OK' },
  };
  // The backoff doubles from 20 ms: 12 refusals in a row wait 20 s and more (half of 20 ms ×
  // 4095 at least), 4 at a time a fraction of a second.
  const { heartbeat, store, close } = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 8,
    retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 60_000 },
  });
  cleanups.push(async () => {
    await heartbeat.stop();
    close();
  });
  const add = (text: string) =>
    store.addEvent({ sessionKey: 'main', text, source: 'wake', trusted: true });
  for (let i = 0; i < 3; i++) await add(`${POISON} ${i}`);
  for (let i = 0; i < 5; i++) await add(`ordinary event ${i}`);
  heartbeat.requestNow('wake');
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
});
