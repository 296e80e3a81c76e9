/**
 * Attack: a channel API (or whatever answers at its address: a moved base URL, a proxy) that
 * answers a send with a 307 to another host, the send's credential in the new address, and
 * with the body the product gives for a message posted. A redirect is not followed (the body
 * and the bot's credential would go to whoever the answer names), so nothing was posted: no
 * channel may count the part as sent. Slack did, on `"ok": true` whatever the status, so a
 * reply that went nowhere was recorded as delivered.
 */
import { afterEach, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { ADAPTERS } from '../engine/delivery/registry.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from './helpers/stand-in.ts';

const SECRET = 'Redirect9Secret7Value';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

async function standIn(answer: (req: RecordedRequest) => StandInReply): Promise<StandIn> {
  const started = await startStandIn(answer);
  cleanups.push(() => started.close());
  return started;
}

type Case = {
  to: string;
  settings: (base: string, tokenBase: string) => Record<string, unknown>;
  /** The product's answer to a message posted. */
  posted: unknown;
};

const CASES: Record<string, Case> = {
  whatsapp: {
    to: '+15551234567',
    settings: (baseUrl) => ({
      phoneNumberId: '1029384756',
      accessToken: SECRET,
      apiVersion: 'v23.0',
      baseUrl,
    }),
    posted: {
      messaging_product: 'whatsapp',
      contacts: [{ input: '+15551234567', wa_id: '15551234567' }],
      messages: [{ id: 'wamid.HBgL' }],
    },
  },
  telegram: {
    to: '123456789',
    settings: (baseUrl) => ({ botToken: `123456:${SECRET}`, baseUrl }),
    posted: { ok: true, result: { message_id: 42 } },
  },
  discord: {
    to: '123456789012345678',
    settings: (baseUrl) => ({ botToken: SECRET, baseUrl }),
    posted: { id: '1234567890123456789', content: 'hello' },
  },
  slack: {
    to: 'C0123456789',
    settings: (baseUrl) => ({ botToken: `xoxb-${SECRET}`, baseUrl }),
    posted: { ok: true, channel: 'C0123456789', ts: '1712345678.123456' },
  },
  mattermost: {
    to: 'abcdefghijklmnopqrstuvwxyz',
    settings: (url) => ({ url, token: SECRET }),
    posted: { id: 'post1234567890abcdefghijkl' },
  },
  signal: {
    to: '+15557654321',
    settings: (url) => ({ url, number: '+15550001111' }),
    posted: { timestamp: '1712345678901' },
  },
  imessage: {
    to: '+15550001234',
    settings: (url) => ({ url, password: SECRET }),
    posted: { status: 200, message: 'Message sent!', data: { guid: 'p:0/ABC' } },
  },
  msteams: {
    to: '19:abc-conversation@thread.skype',
    settings: (serviceUrl, tokenBase) => ({
      appId: 'app',
      appPassword: SECRET,
      tenantId: 'tenant',
      serviceUrl,
      tokenUrl: `${tokenBase}/token`,
    }),
    posted: { id: '1700000000000' },
  },
};

it.each(Object.keys(ADAPTERS))(
  '%s: a send answered 307 to another host with the credential in its address, and a "posted" body, is not sent nor followed',
  async (id) => {
    const c = CASES[id] as Case;
    const elsewhere = await standIn(() => ({ status: 200, body: c.posted }));
    const tokens = await standIn(() => ({
      status: 200,
      body: { token_type: 'Bearer', expires_in: 3600, access_token: 'teams-access-token' },
    }));
    const product = await standIn((req) => ({
      status: 307,
      headers: {
        location: `${elsewhere.url}/steal?token=${SECRET}&was=${encodeURIComponent(req.url)}`,
      },
      body: c.posted,
    }));
    const factory = ADAPTERS[id] as (s: Record<string, unknown>) => ChannelAdapter;
    const adapter = factory({ timeoutMs: 5000, ...c.settings(product.url, tokens.url) });
    const result = await adapter.send(adapter.normaliseRecipient?.(c.to) ?? c.to, 'hello');
    expect(product.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
    expect(result.status).toBe('failed');
    expect((result as { reason: string }).reason).toMatch(/HTTP 307/);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  },
);
