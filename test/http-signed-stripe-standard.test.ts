/**
 * End-to-end: Stripe (signed by the `stripe` package's test header) and
 * Standard Webhooks (signed by `standardwebhooks`, and by `svix` under its
 * svix-* headers) over real HTTP: several v1 entries, the timestamp window in
 * both directions, and replays by the sender's event or message id.
 */
import { randomUUID } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { Webhook as SvixWebhook } from 'svix';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { stripeEvent } from './helpers/provider-payloads.ts';
import { nowSeconds, sendRaw, storedActions, UNAUTHORIZED_BODY } from './helpers/signed-http.ts';

const STRIPE_SECRET = 'whsec_5f1e0d9c8b7a69584736251403f2e1d0';
const STRIPE_OTHER = 'whsec_00112233445566778899aabbccddeeff';
const SW_SECRET = `whsec_${Buffer.from('standard-webhooks-secret-32-bytes!').toString('base64')}`;
const TOLERANCE = 60;

const stripe = new Stripe('sk_test_unused');

function stripeHeader(payload: string, secret = STRIPE_SECRET, timestamp = nowSeconds()) {
  return stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });
}

function invoiceFailed(id = `evt_${randomUUID().replaceAll('-', '')}`) {
  const event = stripeEvent('invoice.payment_failed', {
    id: 'in_1',
    object: 'invoice',
    customer: 'cus_B',
    amount_due: 5000,
    currency: 'eur',
  });
  return JSON.stringify({ ...event, id });
}

describe('stripe preset', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        presets: ['stripe'],
        stripe: { auth: { secret: STRIPE_SECRET, toleranceSeconds: TOLERANCE } },
      },
    });
  });
  afterAll(() => server.stop());

  const post = (body: string, signature: string) =>
    sendRaw(server, 'stripe', body, {
      'content-type': 'application/json; charset=utf-8',
      'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      'stripe-signature': signature,
    });

  it('accepts a delivery signed by the stripe library and stores one verified run', async () => {
    const body = invoiceFailed();
    const res = await post(body, stripeHeader(body));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, runId: expect.any(String) });
    const [action] = await storedActions(server);
    expect(action).toMatchObject({
      kind: 'agent',
      sessionKey: 'hook:stripe:cus_B',
      verification: {
        scheme: 'stripe',
        secretIndex: 0,
        deliveryId: JSON.parse(body).id,
        timestamp: expect.any(Number),
        skewSeconds: expect.any(Number),
      },
    });
  });

  it('accepts a header with several v1 entries when one of them matches (a rolled secret)', async () => {
    const body = invoiceFailed();
    const t = nowSeconds();
    const v1 = (secret: string) => /v1=([0-9a-f]+)/.exec(stripeHeader(body, secret, t))?.[1];
    const res = await post(body, `t=${t},v1=${v1(STRIPE_OTHER)},v1=${v1(STRIPE_SECRET)}`);
    expect(res.status).toBe(200);
  });

  it.each([
    ['a stale timestamp', -2 * TOLERANCE],
    ['a future timestamp', 2 * TOLERANCE],
  ])('refuses %s with the generic 401, storing nothing', async (_, offset) => {
    const before = (await storedActions(server)).length;
    const body = invoiceFailed();
    const res = await post(body, stripeHeader(body, STRIPE_SECRET, nowSeconds() + offset));
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
    expect(await storedActions(server)).toHaveLength(before);
  });

  it.each([
    ['a wrong secret', (body: string) => stripeHeader(body, STRIPE_OTHER)],
    [
      'a v0 entry only (the right MAC under another name)',
      (body: string) => stripeHeader(body).replace('v1=', 'v0='),
    ],
    ['no v1 at all', () => `t=${nowSeconds()}`],
  ])('refuses %s with 401', async (_, header) => {
    const body = invoiceFailed();
    expect((await post(body, header(body))).status).toBe(401);
  });

  it('answers Stripe retrying an event (same id, new signature) with the first body, once stored', async () => {
    const before = (await storedActions(server)).length;
    const body = invoiceFailed();
    const first = await post(body, stripeHeader(body, STRIPE_SECRET, nowSeconds() - 5));
    const retry = await post(body, stripeHeader(body));
    expect(first.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await storedActions(server)).toHaveLength(before + 1);
  });
});

type Signer = {
  name: string;
  headers: (id: string, seconds: number, body: string) => Record<string, string>;
};

const SIGNERS: Signer[] = [
  {
    name: 'standardwebhooks (webhook-* headers)',
    headers: (id, seconds, body) => ({
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': new StandardWebhook(SW_SECRET).sign(id, new Date(seconds * 1000), body),
    }),
  },
  {
    name: 'svix (svix-* headers)',
    headers: (id, seconds, body) => ({
      'svix-id': id,
      'svix-timestamp': String(seconds),
      'svix-signature': new SvixWebhook(SW_SECRET).sign(id, new Date(seconds * 1000), body),
    }),
  },
];

describe.each(SIGNERS)('standard webhooks signed by $name', ({ headers }) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'billing',
            match: { path: 'billing' },
            auth: { scheme: 'standard-webhooks', secret: SW_SECRET, toleranceSeconds: TOLERANCE },
            templates: { message: 'Billing event {{type}} for {{data.customer}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const body = JSON.stringify({
    type: 'invoice.paid',
    timestamp: '2026-11-24T10:00:00Z',
    data: { customer: 'cus_9' },
  });
  const post = (id: string, offset = 0) =>
    sendRaw(server, 'billing', body, {
      'content-type': 'application/json',
      ...headers(id, nowSeconds() + offset, body),
    });

  it.each([
    ['now', 0],
    ['inside the window in the past', -TOLERANCE / 2],
    ['inside the window in the future', TOLERANCE / 2],
  ])('accepts a delivery signed %s', async (_, offset) => {
    const id = `msg_${randomUUID()}`;
    const res = await post(id, offset);
    expect(res.status).toBe(200);
    const [action] = await storedActions(server);
    expect(action).toMatchObject({
      kind: 'agent',
      message: expect.stringContaining('Billing event invoice.paid for cus_9'),
      verification: { scheme: 'standard-webhooks', secretIndex: 0, deliveryId: id },
    });
  });

  it.each([
    ['stale', -2 * TOLERANCE],
    ['future', 2 * TOLERANCE],
  ])('refuses a %s timestamp with 401, storing nothing', async (_, offset) => {
    const before = (await storedActions(server)).length;
    const res = await post(`msg_${randomUUID()}`, offset);
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
    expect(await storedActions(server)).toHaveLength(before);
  });

  it('answers a resent message (same id) with the first body, replayed, once stored', async () => {
    const before = (await storedActions(server)).length;
    const id = `msg_${randomUUID()}`;
    const first = await post(id, -1);
    const again = await post(id);
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await storedActions(server)).toHaveLength(before + 1);
  });
});
