/**
 * End-to-end: attacks on signed routes, each named after the attack:
 * replaying a known delivery id without the secret, colliding long delivery
 * ids by a shared prefix, a burst of concurrent redeliveries, reading the
 * signature back through a template, uploading a body unsigned, and sending
 * two disagreeing families of Standard Webhooks headers.
 */
import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { rawExchange } from './helpers/raw-http.ts';
import { nowSeconds, sendRaw, storedActions, UNAUTHORIZED_BODY } from './helpers/signed-http.ts';

const SECRET = 'hostile-secret-0f1e2d3c4b5a6978';
const SW_SECRET = `whsec_${Buffer.from('hostile-standard-webhooks-key!!').toString('base64')}`;
// Each delivery's body differs, as GitHub's do: a byte-identical signed body is a replay.
const bodyOf = (delivery: string) =>
  JSON.stringify({ action: 'opened', issue: { title: 'Crash on start' }, delivery });

describe('attacks on signed routes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'gh',
            match: { path: 'gh' },
            auth: { scheme: 'github', secret: SECRET },
            templates: { message: 'issue {{issue.title}} headers {{json headers}}' },
          },
          {
            id: 'sw',
            match: { path: 'sw' },
            auth: { scheme: 'standard-webhooks', secret: SW_SECRET },
            templates: { message: 'event {{type}} headers {{json headers}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const github = async (delivery: string, options: { secret?: string; payload?: string } = {}) => {
    const payload = options.payload ?? bodyOf(delivery);
    return sendRaw(server, 'gh', payload, {
      'content-type': 'application/json',
      'x-github-event': 'issues',
      'x-github-delivery': delivery,
      'x-hub-signature-256': await sign(options.secret ?? SECRET, payload),
    });
  };

  it('replay of a known delivery id without the secret: 401, never the cached answer', async () => {
    const delivery = randomUUID();
    const first = await github(delivery);
    expect(first.status).toBe(200);
    const forged = await github(delivery, { secret: 'guessed' });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual(UNAUTHORIZED_BODY);
    expect(forged.headers.get('idempotent-replayed')).toBeNull();
  });

  it('long delivery ids sharing their first 256 characters are not one delivery', async () => {
    const prefix = `d${'x'.repeat(300)}`;
    const a = await github(`${prefix}-a`);
    const b = await github(`${prefix}-b`);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    const again = await github(`${prefix}-a`);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(a.text);
    const [latest] = await storedActions(server);
    expect(latest?.verification?.deliveryId).toHaveLength(256);
  });

  it('a token holder pre-claiming a delivery id via Idempotency-Key cannot swallow the delivery', async () => {
    const delivery = randomUUID();
    const planted = await server.post(
      'wake',
      { text: 'planted' },
      { headers: { 'idempotency-key': `delivery:gh:${delivery}` } },
    );
    expect(planted.status).toBe(200);
    const before = (await storedActions(server)).length;
    const res = await github(delivery);
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    expect(res.body).toMatchObject({ ok: true, runId: expect.any(String) });
    const actions = await storedActions(server);
    expect(actions).toHaveLength(before + 1);
    expect(actions[0]).toMatchObject({ mappingId: 'gh', verification: { deliveryId: delivery } });
  });

  it('a token request reusing a signed delivery key is its own request, not a conflict', async () => {
    const delivery = randomUUID();
    expect((await github(delivery)).status).toBe(200);
    const res = await server.post(
      'wake',
      { text: 'unrelated' },
      { headers: { 'idempotency-key': `delivery:gh:${delivery}` } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
  });

  it('a burst of 20 concurrent redeliveries stores one action and gives one answer', async () => {
    const before = (await storedActions(server)).length;
    const delivery = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => github(delivery)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === null)).toHaveLength(1);
    expect(await storedActions(server)).toHaveLength(before + 1);
  });

  it('a redelivery with another (validly signed) body still answers the first answer', async () => {
    const delivery = randomUUID();
    const first = await github(delivery);
    const other = JSON.stringify({ action: 'opened', issue: { title: 'Something else' } });
    const again = await github(delivery, { payload: other });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('reading the signature back through a template: the signature headers are hidden', async () => {
    const delivery = randomUUID();
    const signature = await sign(SECRET, bodyOf(delivery));
    const res = await github(delivery);
    expect(res.status).toBe(200);
    const [action] = await storedActions(server);
    expect(action?.kind === 'agent' && action.message).toContain('x-github-event');
    const text = JSON.stringify(action);
    expect(text).not.toContain(signature.slice(7));
    expect(text).not.toContain('x-hub-signature-256');
  });

  it('standard webhooks: the signature header is hidden from templates too', async () => {
    const id = `msg_${randomUUID()}`;
    const payload = JSON.stringify({ type: 'user.created', data: {} });
    // One time for the signature and the header: two reads can fall on either side of a second.
    const at = new Date(nowSeconds() * 1000);
    const signature = new StandardWebhook(SW_SECRET).sign(id, at, payload);
    const res = await sendRaw(server, 'sw', payload, {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(at.getTime() / 1000),
      'webhook-signature': signature,
    });
    expect(res.status).toBe(200);
    const [action] = await storedActions(server);
    expect(JSON.stringify(action)).not.toContain(signature.split(',')[1]);
  });

  it('an unsigned upload with Expect: 100-continue gets 401, never 100 Continue', async () => {
    const body = bodyOf(randomUUID());
    const head =
      'POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `X-GitHub-Event: issues\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      'Expect: 100-continue\r\n\r\n';
    const answer = await rawExchange(server.url, head, body);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).not.toContain('100 Continue');
  });

  it('two families of Standard Webhooks headers that disagree: 401', async () => {
    const id = `msg_${randomUUID()}`;
    const payload = JSON.stringify({ type: 'user.created', data: {} });
    const now = nowSeconds();
    const signature = new StandardWebhook(SW_SECRET).sign(id, new Date(now * 1000), payload);
    const res = await sendRaw(server, 'sw', payload, {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(now),
      'webhook-signature': signature,
      'svix-id': `msg_${randomUUID()}`,
      'svix-timestamp': String(now),
      'svix-signature': signature,
    });
    expect(res.status).toBe(401);
  });
});
