/**
 * Hostile framing over real HTTP: requests Node's server would answer itself
 * (empty bodies, no request id, no request line, before the path or the lock)
 * or silently misread (codings it does not apply). Each is answered through
 * the stages as a JSON error with a stable code, x-request-id and a request
 * line, and nothing is stored.
 */
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, tempDir, type TestServer } from './helpers/hookgate.ts';
import { readLogLines } from './helpers/log-lines.ts';
import { parseAnswer, rawExchange } from './helpers/raw-http.ts';

const SECRET = 'framing-secret-0123456789abcdef';
const WAKE = '{"text":"framed"}';

function request(
  head: string,
  headers: Record<string, string | undefined>,
  body: string | Buffer = '',
): Buffer {
  const lines = Object.entries(headers)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return Buffer.concat([Buffer.from(`${head}\r\n${lines}\r\n`, 'latin1'), Buffer.from(body)]);
}

function wake(headers: Record<string, string | undefined>, body: string | Buffer = WAKE): Buffer {
  return request(
    'POST /hooks/wake HTTP/1.1',
    {
      host: 'a',
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      ...headers,
    },
    body,
  );
}

describe('framing that Node would answer or misread', () => {
  const temp = tempDir();
  const logFile = path.join(temp.dir, 'service.log');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(
      {
        server: { trustedProxies: ['127.0.0.1'] },
        hooks: {
          authRateLimit: { maxFailures: 2 },
          mappings: [
            {
              id: 'signed',
              match: { path: 'signed' },
              auth: { scheme: 'github', secret: SECRET },
              templates: { message: 'push {{ref}}' },
            },
          ],
        },
      },
      { logFile },
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  const send = async (bytes: Buffer) => parseAnswer(await rawExchange(server.url, bytes));
  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;
  /** The request line of the answer with this request id, once the logger has written it. */
  const lineOf = async (requestId: string) => {
    let line: Record<string, unknown> | undefined;
    await expect
      .poll(async () => {
        await new Promise<void>((resolve, reject) =>
          server.logger.flush((err) => (err ? reject(err) : resolve())),
        );
        line = readLogLines(logFile).find(
          (l) => l['msg'] === 'request' && l['requestId'] === requestId,
        );
        return line !== undefined;
      })
      .toBe(true);
    return line as Record<string, unknown>;
  };

  /** Refused as JSON with this code, a request id, a request line, and no fault logged. */
  async function expectRefused(
    answer: ReturnType<typeof parseAnswer>,
    status: number,
    code: string,
  ): Promise<void> {
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.body).toMatchObject({ ok: false, error: { code } });
    const requestId = answer.headers['x-request-id'];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await lineOf(requestId as string)).toMatchObject({ status, code });
    const faults = readLogLines(logFile).filter((l) => l['msg'] === 'request failed');
    expect(faults.filter((l) => l['requestId'] === requestId)).toEqual([]);
  }

  it.each([
    ['without a Host header', { host: undefined }],
    ['with two Host headers', { host: 'a\r\nhost: b' }],
  ])(
    'an HTTP/1.1 request %s: 400 invalid_host as JSON, logged, nothing stored',
    async (_, headers) => {
      const before = await stored();
      await expectRefused(await send(wake(headers)), 400, 'invalid_host');
      expect(await stored()).toBe(before);
    },
  );

  it('an HTTP/1.0 request without Host is taken (Host is HTTP/1.1 framing)', async () => {
    const before = await stored();
    const bytes = Buffer.from(
      wake({ host: undefined }).toString('latin1').replace('HTTP/1.1', 'HTTP/1.0'),
      'latin1',
    );
    expect((await send(bytes)).status).toBe(200);
    expect(await stored()).toBe(before + 1);
  });

  it('Expect: foo: 417 expectation_failed as JSON, logged, only after the path and the lock', async () => {
    await expectRefused(await send(wake({ expect: 'foo' })), 417, 'expectation_failed');
    // Outside hooks.path the path decides, as for any request.
    const outside = request('POST /elsewhere HTTP/1.1', { host: 'a', expect: 'foo' });
    await expectRefused(await send(outside), 404, 'not_found');
    // A locked client gets its 429 whatever it expects.
    const locked = { 'x-forwarded-for': '10.7.7.7', authorization: 'Bearer wrong' };
    for (let i = 0; i < 2; i++) expect((await send(wake(locked))).status).toBe(401);
    await expectRefused(await send(wake({ ...locked, expect: 'foo' })), 429, 'rate_limited');
  });

  it('a request target in the absolute form (as sent to a proxy) is served by its path', async () => {
    const head = (target: string) =>
      request(
        `POST ${target} HTTP/1.1`,
        {
          host: 'a',
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(WAKE)),
        },
        WAKE,
      );
    const before = await stored();
    expect((await send(head('http://hooks.example.com/hooks/wake'))).status).toBe(200);
    expect((await send(head('HTTP://hooks.example.com:8787/hooks/wake?x=1'))).status).toBe(200);
    expect(await stored()).toBe(before + 2);
    await expectRefused(await send(head('http://hooks.example.com/elsewhere')), 404, 'not_found');
  });

  it('CONNECT: answered as JSON with a request id and logged, then the connection closes', async () => {
    const answer = await send(request('CONNECT 127.0.0.1:1 HTTP/1.1', { host: '127.0.0.1:1' }));
    await expectRefused(answer, 404, 'not_found');
    expect(answer.headers['connection']).toBe('close');
    const onPath = await send(request('CONNECT /hooks/wake HTTP/1.1', { host: 'a' }));
    await expectRefused(onPath, 405, 'method_not_allowed');
  });

  it.each([
    ['a plain JSON body labelled Content-Encoding: gzip', WAKE, 'gzip'],
    ['a gzipped body', gzipSync(WAKE), 'gzip'],
    ['a body labelled br', WAKE, 'br'],
    ['identity then gzip', WAKE, 'identity, gzip'],
  ])('%s on /wake: 415 unsupported_content_encoding, nothing stored', async (_, body, coding) => {
    const before = await stored();
    const answer = await send(wake({ 'content-encoding': coding }, body));
    await expectRefused(answer, 415, 'unsupported_content_encoding');
    expect(await stored()).toBe(before);
  });

  it('Content-Encoding: identity is a body as sent', async () => {
    const before = await stored();
    expect((await send(wake({ 'content-encoding': 'identity' }))).status).toBe(200);
    expect(await stored()).toBe(before + 1);
  });

  it('a gzipped body on a signed route: 401 without a valid signature, 415 with one (over the bytes sent), nothing stored', async () => {
    const body = gzipSync(JSON.stringify({ ref: 'refs/heads/main' }));
    const before = await stored();
    const headers = (signature: string) => ({
      host: 'a',
      authorization: undefined,
      'x-github-event': 'push',
      'x-hub-signature-256': signature,
      'content-encoding': 'gzip',
      'content-type': 'application/json',
      'content-length': String(body.length),
    });
    const post = (signature: string) =>
      send(request('POST /hooks/signed HTTP/1.1', headers(signature), body));
    await expectRefused(await post(`sha256=${'0'.repeat(64)}`), 401, 'unauthorized');
    // The signature is over the bytes as sent (the compressed ones), as a sender would make it.
    const valid = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
    await expectRefused(await post(valid), 415, 'unsupported_content_encoding');
    expect(await stored()).toBe(before);
  });

  it('Transfer-Encoding: gzip, chunked: 501 unsupported_transfer_encoding, nothing stored', async () => {
    const before = await stored();
    const chunked = wake(
      { 'content-length': undefined, 'transfer-encoding': 'gzip, chunked' },
      `${WAKE.length.toString(16)}\r\n${WAKE}\r\n0\r\n\r\n`,
    );
    await expectRefused(await send(chunked), 501, 'unsupported_transfer_encoding');
    expect(await stored()).toBe(before);
  });
});
