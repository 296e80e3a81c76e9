/**
 * Attack: request session keys holding a lone UTF-16 surrogate. JSON may
 * carry one (`"hook:\ud800"`), but UTF-8 cannot: the store writes it as
 * U+FFFD, so `hook:\ud800`, `hook:\udfff` and `hook:\ufffd` were three keys
 * to the caller (each answered with its own `sessionKey`) and one session in
 * the store: the second sender's run was sent the first one's turns as its
 * history (2 turns of another session, measured). Such a key is now refused
 * like any other ill-formed key (400 `invalid_session_key`); a whole pair (an
 * emoji) is a key like any other.
 */
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { agentRunner, query, readRecords } from './helpers/runtime.ts';
import { waitForRun } from './helpers/store-reads.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function boot(): Promise<{ server: TestServer; record: string }> {
  const { dir, cleanup } = tempDir('hookgate-surrogates-');
  cleanups.push(cleanup);
  const record = path.join(dir, 'agent.jsonl');
  const server = await startTestServer(
    {
      hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
      agents: { defaults: { runner: agentRunner(record) }, list: [{ id: 'main' }] },
      runtime: { heartbeat: { every: 'off' } },
    },
    { runtime: true, dataDir: dir },
  );
  cleanups.push(() => server.stop());
  return { server, record };
}

it.each([
  ['a lone high surrogate', 'hook:\ud800'],
  ['a lone low surrogate', 'hook:\udfff'],
  ['a pair the wrong way round', 'hook:\ude00\ud83d'],
  ['a high surrogate at the end', 'hook:ops\ud83d'],
])('a request session key with %s is refused and nothing is stored', async (_name, key) => {
  const { server } = await boot();
  const res = await server.post('agent', { message: 'hi', sessionKey: key });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
    'invalid_session_key',
  );
  expect(query(server.dataDir, 'SELECT COUNT(*) AS n FROM actions')[0]?.['n']).toBe(0);
});

it("a run is never sent another session's turns through a key the store cannot hold", async () => {
  const { server, record } = await boot();
  const post = (message: string, sessionKey: string) =>
    server.post('agent', { message, sessionKey, wakeMode: 'next-heartbeat' });
  expect((await post('the first sender', 'hook:\ud800')).status).toBe(400);
  // U+FFFD itself and an emoji (a whole pair) are well-formed keys, each a session of its own.
  for (const key of ['hook:\ufffd', 'hook:\ud83d\ude00']) {
    const res = await post(`a run in ${key}`, key);
    expect(res.status).toBe(200);
    const { runId, sessionKey } = (await res.json()) as { runId: string; sessionKey: string };
    expect(sessionKey).toBe(key);
    expect((await waitForRun(server, runId)).state).toBe('done');
  }
  const starts = readRecords(record).filter((entry) => entry.phase === 'start');
  expect(starts.map((entry) => [entry.sessionKey, entry.history.length])).toEqual([
    ['hook:\ufffd', 0],
    ['hook:\ud83d\ude00', 0],
  ]);
});
