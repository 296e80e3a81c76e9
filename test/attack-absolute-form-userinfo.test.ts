/**
 * Attack (or a careless client): credentials in the authority of an absolute-form request
 * target (`POST http://<token>@host/hooks/wake`, `http://user:<token>@host/...`). The path
 * was served and the token, in a URL where proxies log it, accepted. A target with userinfo is
 * refused 400 credentials_in_url before anything reads or logs it, nothing stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { parseAnswer, rawExchange } from './helpers/raw-http.ts';

const WAKE = '{"text":"absolute"}';

function post(target: string, headers: Record<string, string> = {}): Buffer {
  const all = {
    host: 'hooks.example.com',
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(WAKE)),
    ...headers,
  };
  const lines = Object.entries(all)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return Buffer.from(`POST ${target} HTTP/1.1\r\n${lines}\r\n${WAKE}`, 'latin1');
}

describe('the hook token in the authority of an absolute-form target', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({});
  });
  afterAll(async () => {
    await server.stop();
  });
  const send = async (bytes: Buffer) => parseAnswer(await rawExchange(server.url, bytes));
  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;

  it.each([
    ['as the userinfo', `http://${TOKEN}@hooks.example.com/hooks/wake`],
    ['as the password of the userinfo', `http://u:${TOKEN}@hooks.example.com/hooks/wake`],
    ['as a user name that is not the token', 'http://someone:secret@hooks.example.com/hooks/wake'],
  ])('credentials %s are refused 400 credentials_in_url, nothing stored', async (_, target) => {
    const before = await stored();
    const answer = await send(post(target, { authorization: `Bearer ${TOKEN}` }));
    expect(answer.status).toBe(400);
    expect((answer.body as { error: { code: string } }).error.code).toBe('credentials_in_url');
    expect(await stored()).toBe(before);
  });
});
