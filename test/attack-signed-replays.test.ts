/**
 * Attacks on signed routes, part one: replay games (a captured delivery under
 * a fresh id, a caller's key spelled like a delivery's, exact repeats on
 * generic hmac routes, retention shorter than the window, a restart), weak
 * secrets, and evading or overshooting the failed-auth lock. One test per
 * attack, named after it, against a real server.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  actionCount,
  attackServers,
  ghMapping,
  githubHeaders,
  stripe,
  stripeMapping,
} from './helpers/attack-signed.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { rawPost } from './helpers/raw-http.ts';

const { holder, start } = attackServers();

describe('replay games', () => {
  it('replaying a captured GitHub delivery under a fresh X-GitHub-Delivery is answered as a replay', async () => {
    // GitHub signs only the body; the delivery id the replay check keys on is an unsigned header.
    const s = await start();
    const body = JSON.stringify({ n: 1 });
    const first = await s.post('gh', body, { token: null, headers: await githubHeaders(body) });
    expect(first.status).toBe(200);
    const captured = (await githubHeaders(body))['x-hub-signature-256'];
    const replay = await s.post('gh', body, {
      token: null,
      headers: {
        'x-github-event': 'push',
        'x-github-delivery': 'anything-new',
        'x-hub-signature-256': captured,
      },
    });
    expect(replay.status).toBe(200);
    // One delivery, one action: the replay must not run anything again.
    expect(await actionCount(s)).toBe(1);
  });

  it('a GitHub delivery with its X-GitHub-Delivery header sent twice is refused 401, nothing stored', async () => {
    // Which copy an intermediary keeps is up to whoever added the second: refused, not picked.
    const s = await start();
    const body = JSON.stringify({ n: 3 });
    const headers = await githubHeaders(body);
    const res = await rawPost(`${s.url}/hooks/gh`, {
      headers: {
        ...headers,
        'x-github-delivery': [headers['x-github-delivery'], randomUUID()],
        'content-type': 'application/json',
      },
      chunks: [body],
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body).error.code).toBe('unauthorized');
    expect(await actionCount(s)).toBe(0);
    const once = await s.post('gh', body, { token: null, headers });
    expect(once.status).toBe(200);
  });

  it("a token caller's Idempotency-Key spelled like a delivery key cannot swallow a later signed delivery", async () => {
    const s = await start();
    const delivery = randomUUID();
    // Anyone with the hook token claims the signed route's key namespace first.
    const poison = await s.post(
      'wake',
      { text: 'decoy' },
      {
        headers: { 'idempotency-key': `delivery:gh:${delivery}` },
      },
    );
    expect(poison.status).toBe(200);
    const body = JSON.stringify({ n: 2 });
    const real = await s.post('gh', body, {
      token: null,
      headers: await githubHeaders(body, delivery),
    });
    expect(real.status).toBe(200);
    expect(real.headers.get('idempotent-replayed')).toBeNull();
    // The genuine, verified delivery must have produced its own action.
    const texts = (await s.store.listActions({ limit: 10 })).map((row) =>
      JSON.stringify(row.action),
    );
    expect(texts.some((text) => text.includes('gh 2'))).toBe(true);
  });

  it('a retention shorter than the signature window (a Stripe replay after the ids are forgotten) is refused at boot', async () => {
    await expect(start({ deliveryRetentionSeconds: 60 })).rejects.toThrow(
      /hooks\.deliveryRetentionSeconds.*toleranceSeconds/,
    );
  });

  it('a retention between one and two tolerances (a delivery signed ahead of our clock, replayed after its id is forgotten) is refused at boot', async () => {
    // Stripe's default 300 s either side: a delivery stamped 300 s ahead, first seen now, still
    // verifies 600 s from now; ids kept 500 s would let it run again in the last 100.
    await expect(start({ deliveryRetentionSeconds: 500 })).rejects.toThrow(
      /hooks\.deliveryRetentionSeconds.*toleranceSeconds/,
    );
    const s = await start({ deliveryRetentionSeconds: 600 });
    expect(s.url).toMatch(/^http:/);
  });
});

describe('replays on generic hmac routes', () => {
  const SHOP_SECRET = 'shopify-secret-0123456789';
  const shopify = (idempotencyKey?: string) => ({
    id: 'shop',
    match: { path: 'shop' },
    action: 'wake',
    textTemplate: 'order {{payload.order}}',
    auth: {
      scheme: 'hmac',
      secret: SHOP_SECRET,
      header: 'x-shopify-hmac-sha256',
      encoding: 'base64',
    },
    ...(idempotencyKey !== undefined && { idempotencyKey }),
  });
  const shopHeaders = (body: string, webhookId: string) => ({
    'x-shopify-hmac-sha256': createHmac('sha256', SHOP_SECRET).update(body).digest('base64'),
    'x-shopify-webhook-id': webhookId,
  });

  it('an exact repeat of a generic hmac delivery (a Shopify retry) runs once', async () => {
    // No signed timestamp and no delivery id rule: the byte-for-byte same request is new again.
    const s = await start({ mappings: [shopify()] });
    const body = JSON.stringify({ order: 1001 });
    const headers = shopHeaders(body, 'b54557e4-bdd9-4b37-8a5f-bf7d70bcd043');
    expect((await s.post('shop', body, { token: null, headers })).status).toBe(200);
    expect((await s.post('shop', body, { token: null, headers })).status).toBe(200);
    expect(await actionCount(s)).toBe(1);
  });

  it('an idempotencyKey template over an unsigned header does not let a replay through under a new id', async () => {
    const s = await start({ mappings: [shopify('{{headers.x-shopify-webhook-id}}')] });
    const body = JSON.stringify({ order: 1002 });
    const first = shopHeaders(body, 'id-one');
    expect((await s.post('shop', body, { token: null, headers: first })).status).toBe(200);
    // Booted without a word: the id the replay check keys on is not covered by the signature.
    const replay = { ...first, 'x-shopify-webhook-id': 'id-two' };
    expect((await s.post('shop', body, { token: null, headers: replay })).status).toBe(200);
    expect(await actionCount(s)).toBe(1);
  });

  it.each([
    ['by name', '{{headers.x-shopify-webhook-id}}'],
    ['through lookup', '{{lookup headers "x-shopify-webhook-id"}}'],
    ['from the root', '{{#with payload}}{{@root.headers.x-shopify-webhook-id}}{{/with}}'],
  ])(
    'an idempotencyKey template reading a header %s, the header sent twice (ids joined into a new one), is refused 401',
    async (_how, template) => {
      const s = await start({ mappings: [shopify(template)] });
      const body = JSON.stringify({ order: 1003 });
      const headers = shopHeaders(body, 'id-a');
      const res = await rawPost(`${s.url}/hooks/shop`, {
        headers: {
          ...headers,
          'x-shopify-webhook-id': ['id-a', 'id-b'],
          'content-type': 'application/json',
        },
        chunks: [body],
      });
      expect(res.status).toBe(401);
      expect(await actionCount(s)).toBe(0);
      expect((await s.post('shop', body, { token: null, headers })).status).toBe(200);
    },
  );
});

describe('weak secrets', () => {
  it('a Stripe secret that is the bare whsec_ prefix (an empty variable after it) is refused at boot', async () => {
    // `secret: "whsec_${SUFFIX}"` with SUFFIX set but empty: the key is public knowledge.
    let booted: TestServer | undefined;
    try {
      booted = await startTestServer({
        hooks: { mappings: [{ ...stripeMapping, auth: { scheme: 'stripe', secret: 'whsec_' } }] },
      });
    } catch {
      return;
    }
    holder.server = booted;
    const body = JSON.stringify({ id: 'evt_forged', type: 'charge.succeeded' });
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: 'whsec_' });
    const res = await booted.post('pay', body, {
      token: null,
      headers: { 'stripe-signature': header },
    });
    expect(res.status).toBe(401);
  });
});

describe('replay after restart', () => {
  it('a GitHub redelivery after a restart on the same data directory runs nothing again', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const hooks = { mappings: [ghMapping] };
      const body = JSON.stringify({ n: 9 });
      const headers = await githubHeaders(body);
      const first = await startTestServer({ hooks }, { dataDir: dir });
      expect((await first.post('gh', body, { token: null, headers })).status).toBe(200);
      await first.stop();
      holder.server = await startTestServer({ hooks }, { dataDir: dir });
      const again = await holder.server.post('gh', body, { token: null, headers });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await actionCount(holder.server)).toBe(1);
    } finally {
      await holder.server?.stop();
      holder.server = undefined;
      cleanup();
    }
  });
});

describe('limiter evasion', () => {
  it('replaying one captured signed delivery does not reset the failed-auth count of token guesses', async () => {
    const s = await start({
      authRateLimit: { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600 },
    });
    const body = JSON.stringify({ n: 3 });
    const captured = await githubHeaders(body);
    expect((await s.post('gh', body, { token: null, headers: captured })).status).toBe(200);
    const statuses: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let guess = 0; guess < 2; guess++) {
        statuses.push(
          (await s.post('wake', { text: 'x' }, { token: `guess-${round}-${guess}` })).status,
        );
      }
      // The replay verifies (and is answered as a replay), which forgets the guesses so far.
      await s.post('gh', body, { token: null, headers: captured });
    }
    // Eight wrong tokens against a limit of three: the address must be locked by now.
    expect(statuses).toContain(429);
  });

  it('bad signatures count toward the per-address lock, and a locked address gets 429 even with a good one', async () => {
    const s = await start({
      authRateLimit: { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600 },
    });
    const body = JSON.stringify({ n: 4 });
    const wrong = { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await s.post('gh', body, { token: null, headers: wrong })).status);
    expect(statuses).toEqual([401, 401, 401]);
    const good = await s.post('gh', body, { token: null, headers: await githubHeaders(body) });
    expect(good.status).toBe(429);
    expect(await actionCount(s)).toBe(0);
  });
});

describe('limiter overshoot', () => {
  it('concurrent forged signatures: none is verified once the first failures lock the address', async () => {
    const s = await start({
      authRateLimit: { maxFailures: 3, windowSeconds: 600, lockoutSeconds: 600 },
    });
    const half = Buffer.alloc(1000, 0x20);
    const headers = {
      'content-type': 'application/json',
      'content-length': 2 * half.length,
      'x-hub-signature-256': `sha256=${'d'.repeat(64)}`,
    };
    // Slow uploads: all twelve pass admit while their bodies are still on the way, and the lock
    // is not looked at again before the MAC.
    const statuses = await Promise.all(
      Array.from({ length: 12 }, () =>
        rawPost(`${s.url}/hooks/gh`, { headers, chunks: [half, { pauseMs: 300 }, half] }).then(
          (r) => r.status,
        ),
      ),
    );
    const verified = statuses.filter((status) => status === 401).length;
    // Three failures lock the address: no more than three bodies should be MACed for it.
    expect(verified).toBeLessThanOrEqual(3);
  });
});
