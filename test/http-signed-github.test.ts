/**
 * End-to-end: the github preset over real HTTP with GitHub's own deliveries
 * (payloads from @octokit/webhooks-examples, signatures from
 * @octokit/webhooks-methods) and no hook token: JSON and form bodies, ping,
 * every way a signature can be wrong, rotation, redelivery, per-route scope.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';
import {
  octokitExample,
  sendRaw,
  storedActions,
  UNAUTHORIZED_BODY,
} from './helpers/signed-http.ts';

const NEW_SECRET = 'new-github-secret-9f8e7d6c5b4a';
const OLD_SECRET = 'old-github-secret-0a1b2c3d4e5f';

// Every real delivery's body differs (ids, timestamps); a byte-identical signed body is a replay.
let issueSerial = 0;
function freshIssue(): string {
  const example = octokitExample('issues', 'opened') as { issue: Record<string, unknown> };
  return JSON.stringify({ ...example, issue: { ...example.issue, id: 9_000_000 + ++issueSerial } });
}
const ping = JSON.stringify(octokitExample('ping'));

/** The headers GitHub sends with a delivery, minus the signature. */
function githubHeaders(event: string, delivery: string = randomUUID()): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'GitHub-Hookshot/7a1c2f3',
    'x-github-event': event,
    'x-github-delivery': delivery,
    'x-github-hook-id': '123456789',
  };
}

async function deliver(
  server: TestServer,
  event: string,
  body: string,
  options: { secret?: string; delivery?: string; path?: string; contentType?: string } = {},
) {
  const headers = githubHeaders(event, options.delivery);
  if (options.contentType) headers['content-type'] = options.contentType;
  headers['x-hub-signature-256'] = await sign(options.secret ?? NEW_SECRET, body);
  return sendRaw(server, options.path ?? 'github', body, headers);
}

describe('github preset: real deliveries, no hook token', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        presets: ['github'],
        github: { auth: { secrets: [NEW_SECRET, OLD_SECRET] } },
        mappings: [
          {
            id: 'mirror',
            match: { path: 'github-mirror' },
            auth: { scheme: 'github', secret: NEW_SECRET },
            templates: { message: 'mirror {{headers.x-github-event}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  it('accepts a JSON issues.opened delivery and stores one agent run verified by github', async () => {
    const before = (await storedActions(server)).length;
    const delivery = randomUUID();
    const res = await deliver(server, 'issues', freshIssue(), { delivery });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, runId: expect.any(String) });
    const actions = await storedActions(server);
    expect(actions).toHaveLength(before + 1);
    const [action] = actions;
    expect(action).toMatchObject({
      kind: 'agent',
      mappingId: 'github-issues',
      verification: { scheme: 'github', secretIndex: 0, deliveryId: delivery },
    });
  });

  it('accepts the same delivery form-encoded (payload=) and makes the same run of it', async () => {
    const json = await deliver(server, 'issues', freshIssue());
    expect(json.status).toBe(200);
    const form = `payload=${encodeURIComponent(freshIssue())}`;
    const res = await deliver(server, 'issues', form, {
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(res.status).toBe(200);
    const [fromForm, fromJson] = await storedActions(server);
    expect(fromForm).toMatchObject({ kind: 'agent', mappingId: 'github-issues' });
    const view = (a: typeof fromForm) =>
      a?.kind === 'agent' ? { message: a.message, sessionKey: a.sessionKey } : undefined;
    expect(view(fromForm)).toEqual(view(fromJson));
  });

  it('answers ping 200 ignored and stores nothing', async () => {
    const before = (await storedActions(server)).length;
    const res = await deliver(server, 'ping', ping);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, ignored: expect.any(String) });
    expect(await storedActions(server)).toHaveLength(before);
  });

  it.each([
    [
      'a wrong secret',
      async (body: string) => ({ 'x-hub-signature-256': await sign('wrong', body) }),
    ],
    ['a missing signature', async () => ({})],
    [
      'a sha1-only signature (downgrade)',
      async (body: string) => ({
        'x-hub-signature': `sha1=${createHmac('sha1', NEW_SECRET).update(body).digest('hex')}`,
      }),
    ],
    [
      'upper-case hex',
      async (body: string) => {
        const good = await sign(NEW_SECRET, body);
        return { 'x-hub-signature-256': `sha256=${good.slice(7).toUpperCase()}` };
      },
    ],
    [
      'a signature of other bytes (tampered body)',
      async () => ({ 'x-hub-signature-256': await sign(NEW_SECRET, ping) }),
    ],
  ])('refuses %s with the generic 401 and stores nothing', async (_, signature) => {
    const before = (await storedActions(server)).length;
    const headers = { ...githubHeaders('issues'), ...(await signature(freshIssue())) };
    const res = await sendRaw(server, 'github', freshIssue(), headers);
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
    expect(await storedActions(server)).toHaveLength(before);
  });

  it('refuses a duplicated X-Hub-Signature-256 header (header smuggling) with 401', async () => {
    const good = await sign(NEW_SECRET, freshIssue());
    const head = Object.entries(githubHeaders('issues'))
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const request =
      `POST /hooks/github HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${head}` +
      `X-Hub-Signature-256: ${good}\r\nX-Hub-Signature-256: ${await sign('other', freshIssue())}\r\n` +
      `Content-Length: ${Buffer.byteLength(freshIssue())}\r\n\r\n${freshIssue()}`;
    const answer = await rawExchange(server.url, request);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain('"code":"unauthorized"');
  });

  it.each([
    [NEW_SECRET, 0],
    [OLD_SECRET, 1],
  ])(
    'rotation: a delivery signed with %s verifies, secretIndex %i is stored',
    async (secret, index) => {
      const res = await deliver(server, 'issues', freshIssue(), { secret });
      expect(res.status).toBe(200);
      const [action] = await storedActions(server);
      expect(action?.verification).toMatchObject({ scheme: 'github', secretIndex: index });
    },
  );

  it('answers a redelivery (same X-GitHub-Delivery) with the first body, replayed, once stored', async () => {
    const before = (await storedActions(server)).length;
    const delivery = randomUUID();
    const body = freshIssue();
    const first = await deliver(server, 'issues', body, { delivery });
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await deliver(server, 'issues', body, { delivery, secret: OLD_SECRET });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await storedActions(server)).toHaveLength(before + 1);
  });

  it('does not take the same delivery id on another signed route as a replay', async () => {
    const before = (await storedActions(server)).length;
    const delivery = randomUUID();
    const body = freshIssue();
    const one = await deliver(server, 'issues', body, { delivery });
    const other = await deliver(server, 'issues', body, { delivery, path: 'github-mirror' });
    expect([one.status, other.status]).toEqual([200, 200]);
    expect(other.headers.get('idempotent-replayed')).toBeNull();
    expect(other.body).not.toEqual(one.body);
    const actions = await storedActions(server);
    expect(actions).toHaveLength(before + 2);
    expect(actions[0]).toMatchObject({
      mappingId: 'mirror',
      verification: { scheme: 'github', deliveryId: delivery },
    });
  });
});
