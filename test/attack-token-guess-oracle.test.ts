/**
 * Attack: guessing the hook token through the URL. The path and the query were searched for
 * the token itself, and a hit was answered 400 token_in_path / token_in_query to anyone, before
 * the lock: a right guess was told apart from a wrong one (a wrong name is 404, a wrong
 * parameter is served on), wrong guesses were never counted, and a locked address could go on
 * guessing. Now the lock comes first, and a request that holds the token in its URL is told so
 * only when it presents the token in its header too; any other gets what a wrong guess gets,
 * on every route, a subscription handshake's and a replayed signed delivery's included (a
 * signature proves a captured request, not the secret), its name and query still kept out of
 * every log and of the console's journal.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

const VERIFY = 'meta-verify-token-0123456789';
const SECRET = 'meta-app-secret-0123456789';
// A signed route with a subscription handshake: the verify token travels in URLs.
const META = {
  id: 'meta',
  match: { path: 'meta' },
  action: 'wake',
  // Reads the parameter a replayer fills with guesses: a right one must not reach the text.
  textTemplate: 'meta {{query.other}} {{query.tag}}',
  auth: {
    scheme: 'hmac',
    secret: SECRET,
    header: 'x-hub-signature-256',
    prefix: 'sha256=',
    verifyToken: VERIFY,
  },
};

async function started(maxFailures: number): Promise<TestServer> {
  const server = await startTestServer({
    hooks: {
      authRateLimit: { maxFailures, windowSeconds: 60, lockoutSeconds: 600 },
      mappings: [META],
    },
  });
  servers.push(server);
  return server;
}

async function answer(server: TestServer, method: string, target: string) {
  const res = await fetch(`${server.url}${target}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(method === 'POST' && { body: '{"text":"x"}' }),
  });
  const text = await res.text();
  // A handshake's answer is its challenge, as plain text.
  if (!res.headers.get('content-type')?.startsWith('application/json'))
    return { status: res.status, text };
  return {
    status: res.status,
    code: (JSON.parse(text) as { error?: { code?: string } }).error?.code,
  };
}

// A guess of the token's own shape, never the token.
const guess = fc
  .string({
    unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'),
    minLength: TOKEN.length,
    maxLength: TOKEN.length,
  })
  .filter((text) => text !== TOKEN);

it('without the header, the right token in the path or a query value is answered as a wrong guess', async () => {
  const server = await started(1_000_000);
  await fc.assert(
    fc.asyncProperty(guess, fc.constantFrom('POST', 'PUT', 'GET'), async (wrong, method) => {
      for (const shape of [
        (t: string) => `/hooks/${t}`,
        (t: string) => `/hooks/${t}.json`,
        (t: string) => `/hooks/wake?q=${t}`,
        (t: string) => `/hooks/wake?${t}`,
        // Whoever knows the verify token (it travels in URLs) must learn nothing more.
        (t: string) =>
          `/hooks/meta?hub.mode=subscribe&hub.verify_token=${VERIFY}&hub.challenge=abc&x=${t}`,
        (t: string) => `/hooks/meta?x=${t}`,
      ]) {
        expect(await answer(server, method, shape(TOKEN))).toEqual(
          await answer(server, method, shape(wrong)),
        );
      }
    }),
    { numRuns: 15 },
  );
});

it('a locked address gets 429 whatever its URL holds, the token included', async () => {
  const server = await started(3);
  for (let i = 0; i < 3; i++) {
    const wrong = await server.post('wake', { text: 'x' }, { token: 'wrong-token' });
    expect(wrong.status).toBe(401);
  }
  for (const [method, target] of [
    ['PUT', `/hooks/${TOKEN}`],
    ['POST', `/hooks/${TOKEN}`],
    ['GET', `/hooks/wake?q=${TOKEN}`],
    ['POST', `/hooks/wake?token=${TOKEN}`],
  ] as const) {
    expect((await answer(server, method, target)).status, `${method} ${target}`).toBe(429);
  }
});

it('guesses in a query value of an existing hook count toward the lock', async () => {
  const server = await started(3);
  for (let i = 0; i < 3; i++) {
    expect((await answer(server, 'POST', `/hooks/wake?q=guess-${i}`)).status).toBe(401);
  }
  expect((await answer(server, 'POST', `/hooks/wake?q=${TOKEN}`)).status).toBe(429);
});

it('with the token in its header too, the token in the URL is still refused by name (400)', async () => {
  const server = await started(1_000_000);
  const res = await fetch(`${server.url}/hooks/${TOKEN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    body: '{"text":"x"}',
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('token_in_path');
});

function signed(body: string): Record<string, string> {
  const mac = createHmac('sha256', SECRET).update(body).digest('hex');
  return { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${mac}` };
}

it('a replayed signed delivery with guesses in its query: a right guess is answered as a wrong one', async () => {
  const server = await started(1_000_000);
  // Each POST a fresh body: a resent one would be a replay, answered from the first.
  const send = (query: string, n: number) => {
    const body = `{"x":${n}}`;
    return fetch(`${server.url}/hooks/meta?${query}`, {
      method: 'POST',
      headers: signed(body),
      body,
    });
  };
  const right = await send(`tag=${TOKEN}&other=1`, 1);
  const wrong = await send(`tag=${'w'.repeat(TOKEN.length)}&other=1`, 2);
  expect(right.status).toBe(200);
  expect(wrong.status).toBe(200);
  expect(Object.keys((await right.json()) as object).sort()).toEqual(
    Object.keys((await wrong.json()) as object).sort(),
  );
  // Nothing the token's query made holds it.
  const stored = await server.store.listActions({ limit: 10 });
  expect(JSON.stringify(stored)).not.toContain(TOKEN);
});
