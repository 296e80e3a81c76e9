/**
 * Attack (or an old client): an HTTP/1.0 request with an `Expect` header. HTTP/1.0 has no
 * expectations: RFC 9110 10.1.1 says to ignore `100-continue` in such a request and never to
 * send a 1xx to such a client, which may take the `100 Continue` for its answer. hookgate sent
 * one, and closed the connection as for a client that held its body back. The header is now
 * ignored on HTTP/1.0 (another expectation there is not refused 417 either); HTTP/1.1 is as
 * before.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';

const BODY = '{"text":"x"}';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({});
});
afterAll(() => server.stop());

function request(version: string, expectation: string, body = BODY): string {
  return (
    `POST /hooks/wake HTTP/${version}\r\nHost: a\r\nAuthorization: Bearer ${TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n` +
    `Expect: ${expectation}\r\n\r\n${body}`
  );
}

it.each(['100-continue', 'foo'])(
  'HTTP/1.0 with Expect: %s: no 1xx, the request served',
  async (expectation) => {
    const answer = await rawExchange(server.url, request('1.0', expectation));
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).not.toContain('100 Continue');
  },
);

it('HTTP/1.1 with Expect: 100-continue still gets 100 Continue before its body', async () => {
  const answer = await rawExchange(server.url, request('1.1', '100-continue', ''), BODY);
  expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
});

it('HTTP/1.1 with another expectation is still 417', async () => {
  const answer = await rawExchange(server.url, request('1.1', 'foo'));
  expect(answer).toMatch(/^HTTP\/1\.1 417 /);
});

it.each(['2.0', '0.9'])(
  'an HTTP/%s request line in HTTP/1 framing is 505, as JSON',
  async (version) => {
    const answer = await rawExchange(server.url, request(version, '100-continue'));
    expect(answer).toMatch(/^HTTP\/1\.1 505 /);
    expect(answer).not.toContain('100 Continue');
    expect(answer).toContain('"code":"http_version_not_supported"');
  },
);
