/**
 * Attack: request session keys that read like another key. A zero-width space, a bidi
 * override or a byte order mark inside `hook:ab` gave a session of its own that every log,
 * CLI listing and the console showed as `hook:ab` (or, with an override, as a different key):
 * two sessions an operator cannot tell apart. Format characters are refused like whitespace
 * and controls (400 `invalid_session_key`), nothing stored; the plain key is accepted.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    hooks: { allowRequestSessionKey: true, allowedSessionKeyPrefixes: ['hook:'] },
  });
});
afterAll(() => server.stop());

const stored = async () => (await server.store.listActions({ limit: 1000 })).length;

it.each([
  ['a zero-width space', 'hook:a\u200bb'],
  ['a right-to-left override', 'hook:a\u202eb'],
  ['a first-strong isolate', 'hook:\u2068ab'],
  ['a byte order mark', 'hook:ab\ufeff'],
  ['a soft hyphen', 'hook:a\u00adb'],
  ['a word joiner', 'hook:a\u2060b'],
  ['a combining grapheme joiner', 'hook:a\u034fb'],
  ['a variation selector', 'hook:a\ufe0fb'],
  ['a supplementary variation selector', 'hook:a\udb40\udd00b'],
  ['a Hangul filler', 'hook:a\u3164b'],
  ['a Mongolian variation selector', 'hook:a\u180bb'],
])('a request session key holding %s is refused and nothing is stored', async (_name, key) => {
  const before = await stored();
  const res = await server.post('agent', { message: 'hi', sessionKey: key });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
    'invalid_session_key',
  );
  expect(await stored()).toBe(before);
});

it('the key as it reads is accepted', async () => {
  const res = await server.post('agent', { message: 'hi', sessionKey: 'hook:ab' });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { sessionKey: string }).sessionKey).toBe('hook:ab');
});
