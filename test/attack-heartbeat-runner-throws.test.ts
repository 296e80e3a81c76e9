/**
 * Attack: a heartbeat whose runner throws on an event's text (a defect, or text no check
 * foresaw). It was only logged "heartbeat crashed": its record stayed `running`, its events
 * pending, and every later heartbeat sent the same events into the same throw (the isolation
 * of refused events never saw an outcome). Now the throw is the turn refused: the record ends
 * failed, the event that throws is isolated and set aside as a refused one is, and the other
 * events are answered.
 */
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const close of cleanups.splice(0)) close();
});

it('a heartbeat whose runner throws ends failed, and the event that throws is set aside', async () => {
  const answered: string[] = [];
  const runner: Runner = {
    run(run) {
      if (run.message.includes('BOOM'))
        throw new URIError('URI malformed at https://bot:sekrit@example.test/');
      answered.push(run.message);
      return Promise.resolve({ status: 'ok', reply: 'HEARTBEAT_OK' });
    },
  };
  const { heartbeat, store, close } = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 10,
  });
  cleanups.push(close);
  await store.addEvent({ sessionKey: 'main', text: 'BOOM', source: 'wake', trusted: true });
  await store.addEvent({ sessionKey: 'main', text: 'deploy done', source: 'wake', trusted: true });
  // Heartbeats until every event is consumed (answered or set aside), at most a few.
  for (let i = 0; i < 10; i++) {
    const events = await store.events('main', 10);
    if (events.every((event) => event.consumedBy !== null)) break;
    heartbeat.requestNow('wake');
    await heartbeat.idle();
  }
  const records = await store.heartbeats(20);
  expect(records.map((r) => r.state)).not.toContain('running');
  const byId = new Map(records.map((r) => [r.id, r]));
  const events = await store.events('main', 10);
  const boom = events.find((event) => event.text.includes('BOOM'));
  const aside = byId.get(String(boom?.consumedBy));
  expect(aside?.state).toBe('failed');
  expect(aside?.error).toContain('set aside');
  expect(JSON.stringify(records)).not.toContain('sekrit');
  const done = events.find((event) => event.text.includes('deploy done'));
  expect(byId.get(String(done?.consumedBy))?.state).toBe('done');
  expect(answered.some((message) => message.includes('deploy done'))).toBe(true);
});
