/**
 * End-to-end: the guard stage over real HTTP (path, method, token carriers,
 * token in query, failed-auth rate limit).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import { rawExchange, rawPost } from './helpers/raw-http.ts';

async function errorCode(res: Response): Promise<string> {
  const body = (await res.json()) as { ok: boolean; error: { code: string } };
  expect(body.ok).toBe(false);
  return body.error.code;
}

describe('path and method', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ hooks: { path: 'inbound/' } });
  });
  afterAll(() => server.stop());

  it.each([
    ['outside the hooks path', '/other/wake', 'POST', 404, 'not_found'],
    ['the hooks path itself', '/inbound', 'POST', 404, 'not_found'],
    ['GET on a hook', '/inbound/wake', 'GET', 405, 'method_not_allowed'],
    ['PUT on a hook', '/inbound/agent', 'PUT', 405, 'method_not_allowed'],
    ['DELETE on an unknown hook', '/inbound/nope', 'DELETE', 405, 'method_not_allowed'],
  ])('%s: %s %s -> %i %s', async (_name, path, method, status, code) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await errorCode(res)).toBe(code);
    if (status === 405) expect(res.headers.get('allow')).toBe('POST');
  });

  it('normalises the configured path (inbound/ -> /inbound)', async () => {
    const res = await server.post('wake', { text: 'hi' });
    expect(res.status).toBe(200);
  });

  it('answers an unknown hook name with 404 unknown_hook, after authentication', async () => {
    const authed = await server.post('nope', { text: 'x' });
    expect(authed.status).toBe(404);
    expect(await errorCode(authed)).toBe('unknown_hook');
    const anonymous = await server.post('nope', { text: 'x' }, { token: null });
    expect(anonymous.status).toBe(401);
  });

  it('an unknown hook name with a body over the limit: 404 unknown_hook, before the body (no 413)', async () => {
    const big = await server.post('nope', { text: 'x'.repeat(300_000) });
    expect(big.status).toBe(404);
    expect(await errorCode(big)).toBe('unknown_hook');
  });
});

describe('hooks disabled', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ hooks: { enabled: false } });
  });
  afterAll(() => server.stop());

  it('answers 404 for every hook, even with the right token', async () => {
    for (const name of ['wake', 'agent']) {
      const res = await server.post(name, { text: 'x', message: 'x' });
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe('not_found');
    }
  });
});

describe('token carriers', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it.each([
    ['Bearer', { authorization: `Bearer ${TOKEN}` }, 200],
    ['bearer in lower case', { authorization: `bearer ${TOKEN}` }, 200],
    ['BEARER in upper case', { authorization: `BEARER ${TOKEN}` }, 200],
    ['x-hookgate-token', { 'x-hookgate-token': TOKEN }, 200],
    ['no token', {}, 401],
    ['wrong bearer token', { authorization: 'Bearer nope' }, 401],
    ['token with a suffix', { authorization: `Bearer ${TOKEN}x` }, 401],
    ['token prefix only', { authorization: `Bearer ${TOKEN.slice(0, 5)}` }, 401],
    ['Basic scheme', { authorization: `Basic ${TOKEN}` }, 401],
    ['wrong x-hookgate-token', { 'x-hookgate-token': 'nope' }, 401],
    ['empty bearer', { authorization: 'Bearer ' }, 401],
  ])('%s -> %i', async (_name, headers, status) => {
    const res = await server.post('wake', { text: 'hi' }, { token: null, headers });
    expect(res.status).toBe(status);
    if (status === 401) expect(await errorCode(res)).toBe('unauthorized');
  });

  it.each([
    ['/wake?token=x', 400],
    ['/wake?a=1&token=', 400],
    [`/agent?token=${TOKEN}`, 400],
  ])(
    'token in the query string (%s) is 400 token_in_query, even with a good header',
    async (suffix, status) => {
      const res = await fetch(`${server.url}/hooks${suffix}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ text: 'x', message: 'x' }),
      });
      expect(res.status).toBe(status);
      expect(await errorCode(res)).toBe('token_in_query');
    },
  );

  it('accepts other query parameters', async () => {
    const res = await fetch(`${server.url}/hooks/wake?source=ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ text: 'x' }),
    });
    expect(res.status).toBe(200);
  });
});

describe('failed-auth rate limit', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      server: { trustedProxies: ['127.0.0.1'] },
      hooks: { authRateLimit: { maxFailures: 5, windowSeconds: 60, lockoutSeconds: 30 } },
    });
  });
  afterAll(() => server.stop());

  // Each case uses its own client address through the trusted proxy.
  const from = (ip: string, token: string | null) =>
    server.post('wake', { text: 'x' }, { token, headers: { 'x-forwarded-for': ip } });

  it('locks an address after maxFailures failures; then 429 with Retry-After', async () => {
    for (let i = 0; i < 5; i++) expect((await from('10.0.0.1', 'bad')).status).toBe(401);
    const limited = await from('10.0.0.1', 'bad');
    expect(limited.status).toBe(429);
    expect(await errorCode(limited)).toBe('rate_limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(30);
    // Missing tokens are refused the same way while locked.
    expect((await from('10.0.0.1', null)).status).toBe(429);
  });

  it('counts per client address', async () => {
    for (let i = 0; i < 6; i++) await from('10.0.0.2', 'bad');
    expect((await from('10.0.0.2', 'bad')).status).toBe(429);
    expect((await from('10.0.0.3', 'bad')).status).toBe(401);
  });

  it('a correct token from a locked address gets 429 and does not lift the lock', async () => {
    for (let i = 0; i < 5; i++) await from('10.0.0.4', 'bad');
    const right = await from('10.0.0.4', TOKEN);
    expect(right.status).toBe(429);
    expect(await errorCode(right)).toBe('rate_limited');
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
    // Same answer as a wrong guess: the lock tells a guesser nothing.
    expect((await from('10.0.0.4', 'bad')).status).toBe(429);
    expect((await from('10.0.0.4', TOKEN)).status).toBe(429);
    expect(await server.store.listActions({ limit: 1000 })).toHaveLength(0);
  });

  it('guessing from a locked address is not faster than the lock allows', async () => {
    for (let i = 0; i < 5; i++) await from('10.0.0.6', `guess-${i}`);
    const guesses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => from('10.0.0.6', i === 25 ? TOKEN : `guess-${i}`)),
    );
    expect(new Set(guesses.map((res) => res.status))).toEqual(new Set([429]));
  });

  it('a correct token before the lock clears the count', async () => {
    for (let i = 0; i < 4; i++) await from('10.0.0.7', 'bad');
    expect((await from('10.0.0.7', TOKEN)).status).toBe(200);
    for (let i = 0; i < 4; i++) expect((await from('10.0.0.7', 'bad')).status).toBe(401);
  });

  it('guesses spread over one IPv6 /64 share one lock', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await from(`2001:db8:7:7::${(i + 1).toString(16)}`, 'bad')).status).toBe(401);
    }
    expect((await from('2001:db8:7:7:ffff:1:2:3', 'bad')).status).toBe(429);
    expect((await from('2001:db8:7:8::1', 'bad')).status).toBe(401);
  });

  it('wrong tokens through the trusted proxy under hops that are no bare address (ip:port, [ipv6]:port, garbage, empty): each hop is a client of its own, the proxy and the senders behind it are not locked out', async () => {
    for (const hop of ['10.0.8.1:80', '[2001:db8:8::1]:443', 'garbage', '']) {
      for (let i = 0; i < 5; i++) expect((await from(hop, 'bad')).status).toBe(401);
      expect((await from(hop, 'bad')).status).toBe(429);
    }
    // A hop with a port is its address: the address without the port is the locked client.
    expect((await from('10.0.8.1', TOKEN)).status).toBe(429);
    expect((await from('[2001:db8:8::2]', TOKEN)).status).toBe(429);
    // Another sender behind the proxy, and the proxy itself, still get through.
    expect((await from('10.0.8.2', TOKEN)).status).toBe(200);
    expect((await server.post('wake', { text: 'x' })).status).toBe(200);
  });

  it('does not count token-in-query refusals as failures', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${server.url}/hooks/wake?token=x`, {
        method: 'POST',
        headers: { 'x-forwarded-for': '10.0.0.5' },
        body: '{}',
      });
      expect(res.status).toBe(400);
    }
    expect((await from('10.0.0.5', 'bad')).status).toBe(401);
  });

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    const untrusted = await startTestServer({ hooks: { authRateLimit: { maxFailures: 2 } } });
    try {
      const spoof = (ip: string) =>
        untrusted.post('wake', { text: 'x' }, { token: 'bad', headers: { 'x-forwarded-for': ip } });
      expect((await spoof('10.9.9.1')).status).toBe(401);
      expect((await spoof('10.9.9.2')).status).toBe(401);
      // Different forwarded addresses, same socket peer: still locked.
      expect((await spoof('10.9.9.3')).status).toBe(429);
    } finally {
      await untrusted.stop();
    }
  });
});

describe('two token carriers at once', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it('accepts the same token in both carriers', async () => {
    const res = await server.post(
      'wake',
      { text: 'x' },
      { headers: { 'x-hookgate-token': TOKEN } },
    );
    expect(res.status).toBe(200);
  });

  it.each([
    ['a wrong bearer beside a right x-hookgate-token', 'wrong', TOKEN],
    ['a right bearer beside a wrong x-hookgate-token', TOKEN, 'wrong'],
    ['a right bearer beside an empty x-hookgate-token', TOKEN, ''],
  ])('carriers that disagree are refused: %s', async (_name, bearer, header) => {
    const res = await rawPost(`${server.url}/hooks/wake`, {
      headers: { authorization: `Bearer ${bearer}`, 'x-hookgate-token': header },
      chunks: ['{"text":"x"}'],
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).error.code).toBe('unauthorized');
  });

  it('a repeated Authorization header with a different token is refused', async () => {
    const answer = await rawExchange(
      server.url,
      `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        'Authorization: Bearer wrong\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"text":"x"}',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  });
});

describe('token in the query string', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  it.each([
    '?TOKEN=x',
    '?Token=x',
    '?access_token=x',
    '?ACCESS_TOKEN=x',
    '?auth_token=x',
    '?to%6Ben=x',
    '?a=1&Access_Token',
    `?access_token=${TOKEN}`,
  ])('%s is refused with 400 token_in_query whatever its case or alias', async (query) => {
    const res = await fetch(`${server.url}/hooks/wake${query}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ text: 'x' }),
    });
    expect(res.status).toBe(400);
    expect(await errorCode(res)).toBe('token_in_query');
    expect(await server.store.listActions({ limit: 10 })).toHaveLength(0);
  });

  it.each(['?tokens=x', '?page_token=x', '?source=token'])(
    '%s is an ordinary parameter',
    async (query) => {
      const res = await fetch(`${server.url}/hooks/wake${query}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ text: 'x' }),
      });
      expect(res.status).toBe(200);
    },
  );
});

describe('Expect: 100-continue', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  const head = (token: string) =>
    `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
    'Content-Type: application/json\r\nContent-Length: 12\r\nExpect: 100-continue\r\n\r\n';

  it('an unauthenticated sender gets 401, never 100 Continue', async () => {
    const answer = await rawExchange(server.url, head('wrong'));
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).not.toContain('100 Continue');
  });

  it('an authenticated sender gets 100 Continue, then 200 for its body', async () => {
    const answer = await rawExchange(server.url, head(TOKEN), '{"text":"x"}');
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  });

  // Refused before the body is asked for: the sender uploads nothing it would be refused for.
  it.each([
    ['a declared length over the limit', '/hooks/wake', 'application/json', 2_000_000, 413],
    ['an unknown hook', '/hooks/nothing-here', 'application/json', 12, 404],
    ['a content type the route does not take', '/hooks/wake', 'application/xml', 12, 415],
  ])(
    'an authenticated sender with %s gets its refusal, never 100 Continue',
    async (_name, path, type, length, status) => {
      const request =
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        `Content-Type: ${type}\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
      const answer = await rawExchange(server.url, request);
      expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(answer).not.toContain('100 Continue');
    },
  );
});

describe('a refusal answered before its body arrives', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.stop());

  const request = (token: string, body: string) =>
    `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;

  /** One connection: the refused request's head, its body only after the 401, then a good request. */
  function refusedThenAccepted(): Promise<string> {
    const { hostname, port } = new URL(server.url);
    const body = JSON.stringify({ text: 'after the refusal' });
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let seen = '';
      let sentRest = false;
      socket.setEncoding('utf8');
      socket.on('error', reject);
      socket.on('close', () => resolve(seen));
      socket.on('data', (chunk: string) => {
        seen += chunk;
        if (!sentRest && seen.includes('\r\n\r\n{') && seen.includes('}')) {
          sentRest = true;
          socket.write(body + request(TOKEN, body) + body);
        }
        if ((seen.match(/HTTP\/1\.1 /g) ?? []).length === 2 && seen.endsWith('}')) socket.end();
      });
      socket.write(request('wrong', body));
    });
  }

  it('the 401 comes before the body is sent, and the connection then serves the next request', async () => {
    const answers = await refusedThenAccepted();
    const [first, second] = answers.split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 401 /);
    expect(first).toContain('"code":"unauthorized"');
    expect(second).toMatch(/^HTTP\/1\.1 200 /);
    // The refused body was read and dropped, not taken for the next request.
    expect(second).toContain('"ok":true');
  });
});
