/**
 * End-to-end: the generic `hmac` scheme over real HTTP, configured as two
 * real senders sign: Shopify (base64, no prefix) and Meta (`sha256=` hex), and
 * Meta's GET subscription handshake (the challenge echoed for the right
 * verify token, 403 for a wrong one, 405 on a route without a verify token).
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { sendRaw, storedActions, UNAUTHORIZED_BODY } from './helpers/signed-http.ts';

const SHOPIFY_SECRET = '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';
const META_SECRET = 'meta-app-secret-5c4b3a2918f7e6d5';
const VERIFY_TOKEN = 'meta-verify-token-7d1f0e';

const mac = (secret: string, body: string, encoding: 'hex' | 'base64') =>
  createHmac('sha256', secret).update(body).digest(encoding);

const shopifyOrder = JSON.stringify({
  id: 820982911946154500,
  name: '#9999',
  email: 'jon@example.com',
  total_price: '403.00',
  currency: 'USD',
});

const metaMessage = JSON.stringify({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      changes: [
        {
          field: 'messages',
          value: { messages: [{ from: '16315551181', id: 'wamid.ABC', text: { body: 'Hello' } }] },
        },
      ],
    },
  ],
});

describe('generic hmac: shopify and meta', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'shopify-orders',
            match: { path: 'shopify' },
            auth: {
              scheme: 'hmac',
              secret: SHOPIFY_SECRET,
              header: 'X-Shopify-Hmac-Sha256',
              encoding: 'base64',
            },
            idempotencyKey: '{{headers.x-shopify-webhook-id}}',
            templates: { message: 'Order {{name}} for {{total_price}} {{currency}}' },
          },
          {
            id: 'meta-messages',
            match: { path: 'meta' },
            auth: {
              scheme: 'hmac',
              secret: META_SECRET,
              header: 'X-Hub-Signature-256',
              prefix: 'sha256=',
              verifyToken: VERIFY_TOKEN,
            },
            templates: {
              message: 'WhatsApp: {{payload.entry.0.changes.0.value.messages.0.text.body}}',
            },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  const shopify = (signature: string, webhookId = 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043') =>
    sendRaw(server, 'shopify', shopifyOrder, {
      'content-type': 'application/json',
      'x-shopify-topic': 'orders/create',
      'x-shopify-shop-domain': 'example.myshopify.com',
      'x-shopify-webhook-id': webhookId,
      'x-shopify-hmac-sha256': signature,
    });
  const meta = (signature: string) =>
    sendRaw(server, 'meta', metaMessage, {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
    });
  const subscribe = (path: string, query: Record<string, string>) =>
    fetch(`${server.url}/hooks/${path}?${new URLSearchParams(query)}`);

  it('accepts a Shopify delivery (base64) and keys replays by its webhook id', async () => {
    const before = (await storedActions(server)).length;
    const first = await shopify(mac(SHOPIFY_SECRET, shopifyOrder, 'base64'), 'wh-1');
    expect(first.status).toBe(200);
    const again = await shopify(mac(SHOPIFY_SECRET, shopifyOrder, 'base64'), 'wh-1');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    const actions = await storedActions(server);
    expect(actions).toHaveLength(before + 1);
    expect(actions[0]).toMatchObject({
      message: expect.stringContaining('Order #9999 for 403.00 USD'),
      verification: { scheme: 'hmac', secretIndex: 0, deliveryId: 'wh-1' },
    });
  });

  it('accepts a Meta delivery (sha256= hex)', async () => {
    const res = await meta(`sha256=${mac(META_SECRET, metaMessage, 'hex')}`);
    expect(res.status).toBe(200);
    const [action] = await storedActions(server);
    expect(action).toMatchObject({
      mappingId: 'meta-messages',
      message: expect.stringContaining('WhatsApp: Hello'),
      verification: { scheme: 'hmac', secretIndex: 0 },
    });
  });

  it.each([
    [
      'Shopify: hex where base64 is expected',
      () => shopify(mac(SHOPIFY_SECRET, shopifyOrder, 'hex')),
    ],
    ['Shopify: a wrong secret', () => shopify(mac('wrong', shopifyOrder, 'base64'))],
    ['Meta: no sha256= prefix', () => meta(mac(META_SECRET, metaMessage, 'hex'))],
    ['Meta: a wrong secret', () => meta(`sha256=${mac('wrong', metaMessage, 'hex')}`)],
    ['Meta: an empty header', () => meta('')],
  ])('refuses %s with the generic 401, storing nothing', async (_, send) => {
    const before = (await storedActions(server)).length;
    const res = await send();
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED_BODY);
    expect(await storedActions(server)).toHaveLength(before);
  });

  it('answers the Meta GET handshake with the challenge for the right verify token', async () => {
    const res = await subscribe('meta', {
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY_TOKEN,
      'hub.challenge': '1158201444',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await res.text()).toBe('1158201444');
  });

  it('reflecting markup through hub.challenge: echoed only as text/plain, nosniff', async () => {
    const challenge = '<script>alert(1)</script>';
    const res = await subscribe('meta', {
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY_TOKEN,
      'hub.challenge': challenge,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe(challenge);
  });

  it.each([
    ['with a blank', 'two words'],
    ['of 257 characters', 'c'.repeat(257)],
  ])('refuses a challenge %s with 400', async (_, challenge) => {
    const res = await subscribe('meta', {
      'hub.mode': 'subscribe',
      'hub.verify_token': VERIFY_TOKEN,
      'hub.challenge': challenge,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).not.toContain(challenge);
  });

  it.each([
    [
      'a wrong verify token',
      { 'hub.mode': 'subscribe', 'hub.verify_token': 'nope', 'hub.challenge': '1' },
    ],
    ['no verify token', { 'hub.mode': 'subscribe', 'hub.challenge': '1' }],
    [
      'another mode',
      { 'hub.mode': 'unsubscribe', 'hub.verify_token': VERIFY_TOKEN, 'hub.challenge': '1' },
    ],
  ])('refuses the handshake with %s: 403, no echo', async (_, query) => {
    const res = await subscribe('meta', query);
    expect(res.status).toBe(403);
    const body = (await res.json()) as { error: { code: string } };
    expect(body.error.code).toBe('verify_token_mismatch');
  });

  it.each([['shopify'], ['wake'], ['agent']])(
    'answers GET on %s (no verify token) with 405',
    async (path) => {
      const res = await subscribe(path, {
        'hub.mode': 'subscribe',
        'hub.verify_token': VERIFY_TOKEN,
        'hub.challenge': '1',
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    },
  );
});
