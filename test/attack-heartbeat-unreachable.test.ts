/**
 * Attack: the agent's endpoint is briefly unreachable (a 503, a 429, a
 * refused connection) when a wake asks for a heartbeat now. The turn did not
 * happen, as for an agent run, yet the heartbeat was not asked again: the
 * wake's event waited for the next scheduled check, and with the schedule
 * off, for the next wake, however long. It is asked again with the retry
 * policy's backoff, up to its attempts; a final error still is not.
 * Attempts used up count as a refusal: one event the runner always answers
 * 5xx to is narrowed down and set aside as a refused one is.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { RunResult, Runner } from '../engine/runtime/runners/runner.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';
import { waitFor } from './helpers/runtime.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function setup(answers: RunResult[], retry = { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 }) {
  const calls: string[] = [];
  const runner: Runner = {
    run: async (input) => {
      calls.push(input.message);
      return answers[calls.length - 1] ?? { status: 'ok', reply: 'HEARTBEAT_OK' };
    },
  };
  const opened = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 10,
    retry,
  });
  cleanups.push(() => {
    void opened.heartbeat.stop();
    opened.close();
  });
  return { ...opened, calls };
}

const pending = async (store: ReturnType<typeof testHeartbeat>['store']) =>
  (await store.pendingSizes('main', 100)).length;

it('a heartbeat asked for now whose runner was unreachable is asked again after a backoff', async () => {
  const { heartbeat, store, calls } = setup([
    { status: 'retry', reason: 'HTTP 503' },
    { status: 'retry', reason: 'unreachable: ECONNREFUSED' },
  ]);
  await store.addEvent({ sessionKey: 'main', text: 'urgent', source: 'wake', trusted: true });
  heartbeat.requestNow('wake');
  await waitFor('the event to be consumed', async () => (await pending(store)) === 0);
  expect(calls).toHaveLength(3);
});

it('is asked again no more than the retry policy allows, nor after a final error', async () => {
  const down: RunResult = { status: 'retry', reason: 'HTTP 503' };
  const { heartbeat, store, calls } = setup(Array.from({ length: 20 }, () => down));
  await store.addEvent({ sessionKey: 'main', text: 'urgent', source: 'wake', trusted: true });
  heartbeat.requestNow('wake');
  // Three attempts with the event, taken then as refused: the event is held out and the runner
  // tried without it (event-isolation.ts), three attempts, refused too: an outage, it stops.
  await waitFor('six attempts', () => calls.length === 6);
  await heartbeat.idle();
  // A final error of a heartbeat with no event: nothing to narrow down, and asking again would
  // fail in a loop.
  const failed = setup([{ status: 'error', reason: 'exit 1' }]);
  failed.heartbeat.requestNow('wake');
  await failed.heartbeat.idle();
  // Another attempt would come within the backoff's cap (50 ms): four times that goes by.
  const since = Date.now();
  await waitFor('four backoff caps to pass', () => Date.now() - since > 200);
  expect(calls).toHaveLength(6);
  expect(calls.slice(0, 3).every((message) => message.includes('urgent'))).toBe(true);
  expect(calls.slice(3).some((message) => message.includes('urgent'))).toBe(false);
  expect(failed.calls).toHaveLength(1);
  // Nothing is set aside in an outage.
  expect(await pending(store)).toBe(1);
});

it('a retry still due when another heartbeat went through is dropped: no extra agent turn', async () => {
  const { heartbeat, store, calls } = setup([{ status: 'retry', reason: 'HTTP 503' }], {
    maxAttempts: 3,
    baseDelayMs: 150,
    maxDelayMs: 150,
  });
  await store.addEvent({ sessionKey: 'main', text: 'first', source: 'wake', trusted: true });
  heartbeat.requestNow('wake');
  await waitFor('the failed attempt', () => calls.length === 1);
  await heartbeat.idle();
  // A wake before the retry is due: its heartbeat takes the event and goes through.
  await store.addEvent({ sessionKey: 'main', text: 'second', source: 'wake', trusted: true });
  heartbeat.requestNow('wake');
  await waitFor('both events consumed', async () => (await pending(store)) === 0);
  // The retry would have come 150 ms after the failure: twice that goes by.
  const since = Date.now();
  await waitFor('the retry delay to pass', () => Date.now() - since > 300);
  await heartbeat.idle();
  expect(calls).toHaveLength(2);
});

it('an event the runner answers 5xx to on every attempt is set aside; the others reach the agent', async () => {
  const calls: string[] = [];
  const runner: Runner = {
    run: async (input) => {
      calls.push(input.message);
      return input.message.includes('crashes the relay')
        ? { status: 'retry', reason: 'HTTP 502: bad gateway' }
        : { status: 'ok', reply: 'HEARTBEAT_OK' };
    },
  };
  const opened = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 10,
    retry: { maxAttempts: 2, baseDelayMs: 5, maxDelayMs: 20 },
  });
  cleanups.push(() => {
    void opened.heartbeat.stop();
    opened.close();
  });
  const { heartbeat, store } = opened;
  const add = (text: string) =>
    store.addEvent({ sessionKey: 'main', text, source: 'wake', trusted: true });
  await add('first');
  await add('this text crashes the relay');
  await add('third');
  heartbeat.requestNow('wake');
  await waitFor('no event pending', async () => (await pending(store)) === 0, 10_000);
  const beats = new Map((await store.heartbeats(100)).map((beat) => [beat.id, beat]));
  const states = (await store.events('main', 10)).map((event) => [
    event.text,
    beats.get(String(event.consumedBy))?.state,
  ]);
  expect(states).toEqual([
    ['third', 'done'],
    ['this text crashes the relay', 'failed'],
    ['first', 'done'],
  ]);
});
