/**
 * `hookgate events` marks an event a failed heartbeat set aside, and
 * `hookgate events requeue <seq>` offers it again as a new pending copy,
 * through the real `server.ts` process over a store seeded on disk; anything
 * else (a pending event, one a heartbeat consumed, no such event, not a
 * number) is refused with why.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { runHookgate, tempDir } from './helpers/process.ts';

const temp = tempDir('hookgate-cli-requeue-');
const dataDir = path.join(temp.dir, 'data');
const seqs: Record<string, number> = {};

beforeAll(async () => {
  mkdirSync(dataDir, { recursive: true });
  const store = SqliteRuntimeStore.open(dataDir);
  for (const text of ['refused text', 'answered text', 'waiting text'])
    await store.addEvent({ sessionKey: 'main', text, source: 'wake', trusted: false });
  const [refused, answered, waiting] = await store.pendingEvents('main', 10);
  Object.assign(seqs, { refused: refused?.seq, answered: answered?.seq, waiting: waiting?.seq });
  const failed = await store.startHeartbeat('isolate');
  await store.finishHeartbeat(failed, {
    state: 'failed',
    events: [seqs['refused'] as number],
    error: 'event set aside (refused alone twice, others answered between): HTTP 400',
    setAside: [seqs['refused'] as number],
  });
  const done = await store.startHeartbeat('wake');
  await store.finishHeartbeat(done, {
    state: 'done',
    events: [seqs['answered'] as number],
    reply: 'HEARTBEAT_OK',
    ack: true,
  });
  store.close();
});
afterAll(() => temp.cleanup());

const events = async () => {
  const result = await runHookgate(['events', '--json', '--data-dir', dataDir]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { seq: number; text: string; setAside: boolean });
};

it('`events` marks the event a failed heartbeat set aside', async () => {
  const text = await runHookgate(['events', '--data-dir', dataDir]);
  const line = (needle: string) => text.stdout.split('\n').find((l) => l.includes(needle)) ?? '';
  expect(line('refused text')).toContain('set aside');
  expect(line('answered text')).toContain('consumed');
  expect(line('waiting text')).toContain('pending');
  expect(line('refused text')).toContain(String(seqs['refused']));
  const json = await events();
  expect(json.filter((event) => event.setAside).map((event) => event.seq)).toEqual([
    seqs['refused'],
  ]);
});

it('`events requeue <seq>` offers a set-aside event again as a new pending copy', async () => {
  const before = await events();
  const result = await runHookgate([
    'events',
    'requeue',
    String(seqs['refused']),
    '--data-dir',
    dataDir,
  ]);
  expect(result.code, result.stderr).toBe(0);
  const copy = before.length + 1;
  expect(result.stdout).toContain(`Event ${seqs['refused']} is pending again as event`);
  const store = SqliteRuntimeStore.open(dataDir);
  try {
    const pending = await store.pendingEvents('main', 10);
    expect(pending.map((event) => event.text)).toEqual(['waiting text', 'refused text']);
    // The copy keeps the original's trust: still wrapped as untrusted content.
    expect(pending[1]?.trusted).toBe(false);
    expect(pending[1]?.source).toBe('wake');
  } finally {
    store.close();
  }
  expect((await events()).length).toBe(copy);
  // Run twice: one copy only, and the second run says where it went.
  const twice = await runHookgate([
    'events',
    'requeue',
    String(seqs['refused']),
    '--data-dir',
    dataDir,
  ]);
  expect(twice.code).toBe(1);
  expect(twice.stderr).toContain('it was offered again already, as event');
  expect((await events()).length).toBe(copy);
});

it.each([
  ['a pending event', () => String(seqs['waiting']), 1, 'it is still pending'],
  [
    'an event a heartbeat consumed',
    () => String(seqs['answered']),
    1,
    'which did not set it aside',
  ],
  ['no such event', () => '999999', 1, 'there is no such event'],
  ['not a number', () => 'abc', 2, 'named by its number'],
])('`events requeue` refuses %s', async (_name, seq, code, why) => {
  const result = await runHookgate(['events', 'requeue', seq(), '--data-dir', dataDir]);
  expect(result.code).toBe(code);
  expect(result.stderr).toContain(why);
});
