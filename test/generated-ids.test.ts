/**
 * Action ids and generated session keys are time-ordered (UUIDv7: the
 * store's indexes grow at their end), and a session key's 74 random bits
 * still differ between keys made in the same millisecond: another caller
 * cannot guess a session key from when it was made and read or feed that
 * session's history.
 */
import { afterEach, expect, it } from 'vitest';
import { readActions } from '../engine/store/sqlite/action-store.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

it('action ids and generated session keys are time-ordered, with random bits of their own', async () => {
  server = await startTestServer();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const answer = await server.post('agent', { message: `run ${i}`, deliver: false });
    expect(answer.status).toBe(200);
    ids.push(((await answer.json()) as { runId: string }).runId);
  }
  for (const id of ids) expect(id).toMatch(V7);
  const stored = readActions(server.dataDir, 10);
  const keys = stored.map((row) => (row.action as { sessionKey: string }).sessionKey);
  expect(keys).toHaveLength(3);
  for (const key of keys) expect(key).toMatch(new RegExp(`^hook:${V7.source.slice(1)}`));
  // Past the millisecond timestamp (and the version nibble): random, never repeated.
  const randomParts = keys.map((key) => key.slice('hook:'.length).replaceAll('-', '').slice(13));
  expect(new Set(randomParts).size).toBe(3);
});
