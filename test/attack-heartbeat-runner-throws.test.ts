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

it('a heartbeat whose end cannot be written ends failed, and the next heartbeat answers its events', async () => {
  const runner: Runner = {
    run: () => Promise.resolve({ status: 'ok', reply: 'noted' }),
  };
  const { heartbeat, store, close } = testHeartbeat({
    runner,
    logger: pino({ level: 'silent' }),
    maxEvents: 10,
  });
  cleanups.push(close);
  // The end of the first answered heartbeat fails once (a busy disk).
  const finish = store.finishHeartbeat.bind(store);
  let thrown = false;
  store.finishHeartbeat = async (id, result) => {
    if (!thrown && result.state === 'done') {
      thrown = true;
      throw new Error('SQLITE_BUSY: database is locked');
    }
    return finish(id, result);
  };
  await store.addEvent({ sessionKey: 'main', text: 'deploy done', source: 'wake', trusted: true });
  heartbeat.requestNow('wake');
  await heartbeat.idle();
  heartbeat.requestNow('wake');
  await heartbeat.idle();
  const records = await store.heartbeats(10);
  expect(records.map((r) => r.state).sort()).toEqual(['done', 'failed']);
  expect(records.find((r) => r.state === 'failed')?.error).toBe(
    'hookgate error while running the heartbeat (Error)',
  );
  const [event] = await store.events('main', 10);
  expect(records.find((r) => r.id === event?.consumedBy)?.state).toBe('done');
});
