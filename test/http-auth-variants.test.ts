/**
 * The guard over real HTTP against variants of its promises: a locked
 * address gets 429 whatever the method, and an `Expect` list holding
 * `100-continue` (which node:http also holds back for the pipeline) is
 * answered 100 only after authentication.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';

const BODY = '{"text":"x"}';

function request(token: string, expectation: string): string {
  return (
    `POST /hooks/wake HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${BODY.length}\r\n` +
    `Expect: ${expectation}\r\n\r\n`
  );
}

describe('Expect with a list holding 100-continue', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({});
  });
  afterAll(() => server.stop());

  it('Expect "100-continue, foo" with the right token gets 100 Continue, then 200', async () => {
    const answer = await rawExchange(server.url, request(TOKEN, '100-continue, foo'), BODY);
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  it('Expect "100-continue, foo" with a wrong token gets 401 without 100 Continue', async () => {
    const answer = await rawExchange(server.url, request('wrong', '100-continue, foo'), BODY);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).not.toContain('100 Continue');
  });
});

describe('a locked address', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: { authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 30 } },
    });
  });
  afterAll(() => server.stop());

  it('gets 429 with Retry-After for a GET or PUT to a hook too', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${server.url}/hooks/wake`, {
        method: 'POST',
        headers: { authorization: 'Bearer wrong' },
        body: BODY,
      });
      expect(res.status).toBe(401);
    }
    for (const method of ['GET', 'PUT', 'POST']) {
      const res = await fetch(`${server.url}/hooks/wake`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}` },
        ...(method === 'GET' ? {} : { body: BODY }),
      });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
  });
});
