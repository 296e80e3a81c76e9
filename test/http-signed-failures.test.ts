/**
 * End-to-end: failed signatures count toward `hooks.authRateLimit` exactly
 * like failed tokens (the lock answers 429 with Retry-After, even to a then
 * valid signature or token), and nothing unverified is stored or logged: the
 * real binary's log holds no body text, signature value, secret or token.
 */
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';
import {
  listStoredActions,
  type RunningServer,
  startServer,
  useProcessFixtures,
  writeConfig,
} from './helpers/process.ts';
import { sendRaw } from './helpers/signed-http.ts';

const SECRET = 'failures-secret-6a5b4c3d2e1f0a9b';
const VERIFY_TOKEN = 'verify-token-for-the-lock-test';
const MAX_FAILURES = 3;
const LOCKOUT_SECONDS = 120;
const body = JSON.stringify({ action: 'opened', issue: { title: 'a title' } });

type Attempt = (server: TestServer) => Promise<number>;

const badSignature: Attempt = async (server) =>
  (await sendRaw(server, 'gh', body, { 'x-hub-signature-256': await sign('wrong', body) })).status;
const goodSignature: Attempt = async (server) =>
  (await sendRaw(server, 'gh', body, { 'x-hub-signature-256': await sign(SECRET, body) })).status;
const badToken: Attempt = async (server) =>
  (await server.post('wake', { text: 'x' }, { token: 'wrong-token-0123456789' })).status;
const goodToken: Attempt = async (server) => (await server.post('wake', { text: 'x' })).status;
const badVerifyToken: Attempt = async (server) =>
  (await fetch(`${server.url}/hooks/gh?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`))
    .status;

describe('failed signatures and the auth rate limit', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        authRateLimit: {
          maxFailures: MAX_FAILURES,
          windowSeconds: 60,
          lockoutSeconds: LOCKOUT_SECONDS,
        },
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            auth: { scheme: 'github', secret: SECRET, verifyToken: VERIFY_TOKEN },
            action: 'wake',
            templates: { text: 'issue {{issue.title}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  // The limiter is per address and every request comes from 127.0.0.1: one fresh server per row.
  it.each([
    ['bad signatures', [badSignature, badSignature, badSignature]],
    ['bad tokens and a bad signature together', [badToken, badToken, badSignature]],
    ['a bad signature and bad verify tokens', [badSignature, badVerifyToken, badVerifyToken]],
  ])(
    'locks after %s: then a valid signature, token or verify token gets 429 with Retry-After',
    async (_, attempts) => {
      const fresh = await startTestServer({
        hooks: {
          authRateLimit: {
            maxFailures: MAX_FAILURES,
            windowSeconds: 60,
            lockoutSeconds: LOCKOUT_SECONDS,
          },
          mappings: [
            {
              id: 'gh',
              match: { path: 'gh' },
              auth: { scheme: 'github', secret: SECRET, verifyToken: VERIFY_TOKEN },
              action: 'wake',
              templates: { text: 'issue {{issue.title}}' },
            },
          ],
        },
      });
      try {
        const statuses = [];
        for (const attempt of attempts) statuses.push(await attempt(fresh));
        expect(statuses.every((s) => s === 401 || s === 403)).toBe(true);
        const locked = await sendRaw(fresh, 'gh', body, {
          'x-hub-signature-256': await sign(SECRET, body),
        });
        expect(locked.status).toBe(429);
        expect(locked.body.error?.code).toBe('rate_limited');
        const retryAfter = Number(locked.headers.get('retry-after'));
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(LOCKOUT_SECONDS);
        expect(await goodToken(fresh)).toBe(429);
        const handshake = await fetch(
          `${fresh.url}/hooks/gh?hub.mode=subscribe&hub.verify_token=${VERIFY_TOKEN}&hub.challenge=1`,
        );
        expect(handshake.status).toBe(429);
        expect(await fresh.store.listActions({ limit: 10 })).toHaveLength(0);
      } finally {
        await fresh.stop();
      }
    },
  );

  // A valid signature proves a captured request, not a secret: it may be a replay sent beside
  // token guesses, so it must not wipe out their count. Only the hook token clears it.
  it('a verified (or replayed) delivery does not clear the count; a right token does', async () => {
    const fresh = await startTestServer({
      hooks: {
        authRateLimit: { maxFailures: MAX_FAILURES, windowSeconds: 60, lockoutSeconds: 60 },
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            auth: { scheme: 'github', secret: SECRET },
            action: 'wake',
            templates: { text: 'issue {{issue.title}}' },
          },
        ],
      },
    });
    try {
      const statuses = [];
      for (const attempt of [badToken, badToken, goodToken, badToken, badToken, goodSignature])
        statuses.push(await attempt(fresh));
      for (const attempt of [badSignature, goodSignature]) statuses.push(await attempt(fresh));
      expect(statuses).toEqual([401, 401, 200, 401, 401, 200, 401, 429]);
    } finally {
      await fresh.stop();
    }
  });
});

describe('telling failures apart by the answer', () => {
  it('gives one identical 401 for a bad token and every kind of bad signature', async () => {
    const stripeSecret = 'whsec_0123456789abcdef0123456789abcdef';
    const fresh = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            auth: { scheme: 'github', secret: SECRET },
            action: 'ignore',
          },
          {
            id: 'st',
            match: { path: 'st' },
            auth: { scheme: 'stripe', secret: stripeSecret },
            action: 'ignore',
          },
        ],
      },
    });
    try {
      const good = await sign(SECRET, body);
      const stale = `t=${Math.floor(Date.now() / 1000) - 3600},v1=${'0'.repeat(64)}`;
      const answers = [
        await sendRaw(fresh, 'gh', body, {}),
        await sendRaw(fresh, 'gh', body, { 'x-hub-signature-256': 'sha256=zz' }),
        await sendRaw(fresh, 'gh', body, { 'x-hub-signature-256': await sign('wrong', body) }),
        await sendRaw(fresh, 'gh', body, { 'x-hub-signature-256': [good, good].join(', ') }),
        await sendRaw(fresh, 'st', body, { 'stripe-signature': stale }),
        await sendRaw(fresh, 'wake', '{"text":"x"}', { authorization: 'Bearer wrong-token-0123' }),
      ];
      expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 401]);
      expect(new Set(answers.map((a) => a.text)).size).toBe(1);
      expect(new Set(answers.map((a) => a.headers.get('www-authenticate'))).size).toBe(1);
    } finally {
      await fresh.stop();
    }
  });
});

describe('nothing unverified is stored or logged (real binary)', () => {
  const temp = useProcessFixtures();
  const CANARY = 'CANARY-body-text-7Qx';
  let proc: RunningServer;
  let dataDir: string;

  beforeAll(async () => {
    dataDir = temp();
    const config = writeConfig(
      dataDir,
      [
        'log: { level: trace }',
        'runtime: { heartbeat: { every: "off" } }',
        'hooks:',
        '  enabled: true',
        `  token: "${TOKEN}"`,
        '  mappings:',
        '    - id: gh',
        '      match: { path: gh }',
        `      auth: { scheme: github, secret: "${SECRET}" }`,
        '      action: wake',
        '      mode: next-heartbeat',
        '      templates: { text: "issue {{issue.title}}" }',
      ].join('\n'),
    );
    proc = await startServer(['--config', config, '--port', '0', '--data-dir', dataDir]);
  });

  it('refuses every unverified delivery, stores none, and logs no body, signature or secret', async () => {
    const payload = JSON.stringify({ action: 'opened', issue: { title: CANARY } });
    const wrong = await sign('a-guessed-secret', payload);
    const right = await sign(SECRET, payload);
    const attempts: Array<Record<string, string>> = [
      { 'x-hub-signature-256': wrong },
      {},
      { 'x-hub-signature-256': `sha256=${right.slice(7).toUpperCase()}` },
      { 'x-hub-signature-256': right.replace('sha256=', 'sha512=') },
    ];
    const ids: string[] = [];
    for (const headers of attempts) {
      const res = await fetch(`${proc.url}/hooks/gh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-event': 'issues', ...headers },
        body: payload,
      });
      expect(res.status).toBe(401);
      expect(await res.text()).not.toContain(CANARY);
      ids.push(res.headers.get('x-request-id') ?? '');
    }
    expect(await listStoredActions(['--data-dir', dataDir])).toEqual([]);
    // A verified delivery of the same body: its signature and body stay out of the log too.
    const verified = await fetch(`${proc.url}/hooks/gh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': right },
      body: payload,
    });
    expect(verified.status).toBe(200);
    ids.push(verified.headers.get('x-request-id') ?? '');
    for (const id of ids) await proc.waitForStdout(new RegExp(`"requestId":"${id}"`));
    const lines = proc
      .stdout()
      .split('\n')
      .filter((l) => l !== '');
    const requestLines = lines.filter((l) => ids.some((id) => l.includes(id)));
    expect(requestLines.map((l) => JSON.parse(l).authFailure)).toEqual(
      expect.arrayContaining(['mismatch', 'missing', 'malformed']),
    );
    const secrets = [
      CANARY,
      wrong.slice(7),
      right.slice(7),
      right.slice(7).toUpperCase(),
      SECRET,
      TOKEN,
    ];
    for (const line of [...lines, ...proc.stderr().split('\n')]) {
      for (const value of secrets) expect(line).not.toContain(value);
    }
  });
});
