/**
 * End-to-end: the body stage over real HTTP (size limit, timeout, UTF-8,
 * nesting depth, JSON shape), and that refused bodies store nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawPost } from './helpers/raw-http.ts';

const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

describe('body limits and JSON', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      // Only the request timeout: the headers timeout follows it down.
      server: { requestTimeoutMs: 400 },
      hooks: { maxBodyBytes: 1024, maxJsonDepth: 8 },
    });
  });
  afterAll(() => server.stop());

  const code = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;

  it('refuses a declared Content-Length over the limit before reading (413)', async () => {
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: { ...auth, 'content-length': 5000 },
      chunks: ['{"text":"'],
      end: false,
    });
    expect(res.status).toBe(413);
    expect(code(res.body)).toBe('payload_too_large');
  });

  it('cuts a chunked upload once it crosses the limit (413)', async () => {
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: { ...auth, 'transfer-encoding': 'chunked' },
      chunks: ['{"text":"', 'a'.repeat(600), 'a'.repeat(600), { pauseMs: 50 }, 'a'.repeat(600)],
      end: false,
    });
    expect(res.status).toBe(413);
    expect(code(res.body)).toBe('payload_too_large');
  });

  it('accepts a body exactly at the limit', async () => {
    const text = 'a'.repeat(1024 - '{"text":""}'.length);
    const res = await server.post('wake', { text });
    expect(res.status).toBe(200);
  });

  it('answers 408 when the body does not arrive in time', async () => {
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: { ...auth, 'content-length': 100 },
      chunks: ['{"text":'],
      end: false,
    });
    expect(res.status).toBe(408);
    expect(code(res.body)).toBe('request_timeout');
  });

  it.each([
    ['empty body', ''],
    ['not JSON', 'text=hello'],
    ['truncated JSON', '{"text":"hi"'],
    ['a JSON array', '[{"text":"hi"}]'],
    ['a JSON string', '"hi"'],
    ['JSON null', 'null'],
    ['a number', '42'],
    ['too deep', `{"text":"x","a":${'['.repeat(10)}${']'.repeat(10)}}`],
  ])('%s -> 400 invalid_json', async (_name, body) => {
    const res = await server.post('wake', body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });

  it('refuses invalid UTF-8 with 400 invalid_json', async () => {
    const body = Buffer.concat([
      Buffer.from('{"text":"'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    const res = await rawPost(`${server.url}/hooks/wake`, { headers: auth, chunks: [body] });
    expect(res.status).toBe(400);
    expect(code(res.body)).toBe('invalid_json');
  });

  // RFC 8259 forbids senders to add one; a JSON text with it is refused, not read past it.
  it('refuses a body starting with a UTF-8 byte order mark with 400 invalid_json', async () => {
    const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"text":"hi"}')]);
    const res = await rawPost(`${server.url}/hooks/wake`, { headers: auth, chunks: [body] });
    expect(res.status).toBe(400);
    expect(code(res.body)).toBe('invalid_json');
  });

  it('does not count brackets inside strings toward the depth', async () => {
    const res = await server.post('wake', { text: '[[[[[[[[[[[[[[[[{{{{{{{{{{{{' });
    expect(res.status).toBe(200);
  });

  it('accepts nesting up to the limit', async () => {
    const res = await server.post('wake', `{"text":"x","mode":"now"}`);
    expect(res.status).toBe(200);
  });

  it('stores nothing for any refused body', async () => {
    const before = (await server.store.listActions({ limit: 1000 })).length;
    await server.post('wake', 'not json');
    await server.post('wake', '[]');
    await server.post('wake', { text: 'x', extra: 1 });
    const after = (await server.store.listActions({ limit: 1000 })).length;
    expect(after).toBe(before);
  });
});

describe('Node parser refusals are JSON too', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it('answers oversized headers with 431 and a JSON body', async () => {
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: { ...auth, 'x-big': 'a'.repeat(20_000) },
      chunks: ['{"text":"x"}'],
    });
    expect(res.status).toBe(431);
    expect(code(res.body)).toBe('headers_too_large');
  });

  const code = (body: string) => (JSON.parse(body) as { error: { code: string } }).error.code;
});
