/**
 * Attack (or a broken client): a chunked body that node:http's parser refuses part way (a chunk
 * size that is not hex or too large, a chunk line ended by a bare LF, data not followed by CRLF).
 * The request had been handed over and its body read begun; the parser's refusal reached the
 * listener, not the read, which waited for the body time limit: the client got 408
 * request_timeout after server.requestTimeoutMs (30 s by default), its connection held all that
 * time. The read now ends at the refusal: 400 bad_request at once, nothing stored, the
 * connection closed.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';

let server: TestServer;
beforeAll(async () => {
  // Far beyond the test's own time limit: an answer at the body time limit fails the test.
  server = await startTestServer({ server: { requestTimeoutMs: 120_000 } });
});
afterAll(() => server.stop());

const head =
  `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\n` +
  'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';

it.each([
  ['a chunk size that is not hex', 'zz\r\n{"text":"a"}\r\n0\r\n\r\n'],
  ['a chunk size too large', 'ffffffffffffffffff\r\n{"text":"a"}\r\n0\r\n\r\n'],
  ['chunk lines ended by a bare LF', 'c\n{"text":"a"}\n0\n\n'],
  ['data not followed by CRLF', 'c\r\n{"text":"a"}XX0\r\n\r\n'],
])(
  '%s: 400 bad_request at once, nothing stored',
  async (_name, body) => {
    const before = (await server.store.listActions({ limit: 1000 })).length;
    const answer = await rawExchange(server.url, `${head}${body}`);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"code":"bad_request"');
    expect(answer.toLowerCase()).toContain('connection: close');
    expect((await server.store.listActions({ limit: 1000 })).length).toBe(before);
  },
  10_000,
);

it('a good chunked body on the same server is still served', async () => {
  const body = '{"text":"a"}';
  const answer = await rawExchange(
    server.url,
    `${head}${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
  );
  expect(answer).toMatch(/^HTTP\/1\.1 200 /);
});
