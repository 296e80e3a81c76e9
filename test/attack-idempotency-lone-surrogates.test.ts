/**
 * Attack: idempotency keys in a JSON body that hold lone surrogates (`\ud800`, `\udc00`). They
 * have no UTF-8 form, so the store kept each as U+FFFD: two different keys were one, and the
 * second request was answered as a replay of the first (nothing stored). Such a key is now
 * refused, 400 invalid_payload, as a session key of the kind is.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({});
});
afterAll(() => server.stop());

it.each(['\\ud800', '\\udc00', 'key-\\udbff', '\\udc00\\ud800'])(
  'an idempotencyKey %s in the body is refused 400, nothing stored',
  async (key) => {
    const before = (await server.store.listActions({ limit: 1000 })).length;
    const res = await server.post('wake', `{"text":"x","idempotencyKey":"${key}"}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('invalid_payload');
    expect(body.error.message).toContain('idempotencyKey: must be well-formed text');
    expect((await server.store.listActions({ limit: 1000 })).length).toBe(before);
  },
);

it('a key with a whole surrogate pair (an emoji) is a key like any other', async () => {
  const first = await server.post('wake', '{"text":"x","idempotencyKey":"k-\\ud83d\\ude00"}');
  expect(first.status).toBe(200);
  const again = await server.post('wake', '{"text":"x","idempotencyKey":"k-\\ud83d\\ude00"}');
  expect(again.headers.get('idempotent-replayed')).toBe('true');
});
