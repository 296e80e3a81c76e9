/**
 * The WhatsApp adapter against a stand-in of the Cloud API: the shared
 * contract, then the exact request Meta documents (path with version and
 * phone-number id, Bearer token, body shape), E.164 recipients, and the
 * classification of Meta's `error.code` values.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter, SendResult } from '../../engine/delivery/adapter.ts';
import {
  createWhatsAppAdapter,
  WHATSAPP_PAIR_BACKOFF_MS,
  WHATSAPP_THROTTLE_BACKOFF_MS,
} from '../../engine/delivery/adapters/whatsapp.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import { type StandIn, type StandInReply, startStandIn } from '../helpers/stand-in.ts';

const TOKEN = 'EAAG-whatsapp-secret-token';
const PHONE_ID = '106540352242922';

const settings = (baseUrl: string, timeoutMs = 5_000) => ({
  phoneNumberId: PHONE_ID,
  accessToken: TOKEN,
  apiVersion: 'v23.0',
  baseUrl,
  timeoutMs,
});

const metaError = (status: number, code: number, message: string): StandInReply => ({
  status,
  body: {
    error: {
      message: `(#${code}) ${message}`,
      type: 'OAuthException',
      code,
      error_data: { messaging_product: 'whatsapp', details: message },
      fbtrace_id: 'AbCdEf123',
    },
  },
});

const success: StandInReply = {
  status: 200,
  body: {
    messaging_product: 'whatsapp',
    contacts: [{ input: '+16505551234', wa_id: '16505551234' }],
    messages: [{ id: 'wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA' }],
  },
};

const replies: Record<Mode, StandInReply> = {
  ok: success,
  rate_limited: metaError(429, 130429, 'Rate limit hit'),
  server_error: metaError(500, 131000, 'Something went wrong'),
  auth_failed: metaError(401, 190, 'Access token has expired'),
  bad_recipient: metaError(400, 131026, 'Message undeliverable'),
};

describeAdapterContract({
  id: 'whatsapp',
  factory: createWhatsAppAdapter,
  settings,
  validRecipients: ['+16505551234', '+44 20 7946 0958', '+1 (650) 555-1234', '+49.30.1234567'],
  invalidRecipients: [
    '16505551234',
    '0016505551234',
    '+0123456789',
    '+12345',
    '+1234567890123456',
    'abc',
    '',
  ],
  reply: (mode) => replies[mode],
  sent: (req) => {
    const body = req.json as { to: string; text: { body: string } };
    return { text: body.text.body, to: body.to };
  },
  rateLimitMs: WHATSAPP_THROTTLE_BACKOFF_MS,
  secrets: [TOKEN],
});

describe('whatsapp adapter: the Cloud API request', () => {
  let standIn: StandIn;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(() => success);
    adapter = createWhatsAppAdapter(settings(`${standIn.url}/`));
  });
  afterAll(() => standIn.close());

  const last = () => standIn.requests.at(-1)!;

  it('POSTs the documented body to /{version}/{phone-number-id}/messages with a Bearer token', async () => {
    const result = await adapter.send('+16505551234', 'Deploy finished');
    expect(result).toEqual({
      status: 'sent',
      messageId: 'wamid.HBgLMTY1MDU1NTEyMzQVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA',
    });
    const req = last();
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`/v23.0/${PHONE_ID}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json).toEqual({
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '+16505551234',
      type: 'text',
      text: { body: 'Deploy finished', preview_url: false },
    });
  });

  it('sends the normalised E.164 number', async () => {
    expect(adapter.normaliseRecipient?.(' +1 (650) 555-12.34 ')).toBe('+16505551234');
    await adapter.send('+1 (650) 555-1234', 'x');
    expect((last().json as { to: string }).to).toBe('+16505551234');
  });

  it('counts a 200 without a message id as sent', async () => {
    standIn.respond(() => ({ status: 200, body: { messaging_product: 'whatsapp' } }));
    expect(await adapter.send('+16505551234', 'x')).toEqual({ status: 'sent' });
    standIn.respond(() => success);
  });
});

describe('whatsapp adapter: recipients', () => {
  const adapter = createWhatsAppAdapter(settings('http://127.0.0.1:9'));
  it.each([
    ['+16505551234', null],
    ['+1 650-555-1234', null],
    ['+551199998888', null],
    ['+1234567', null],
    ['+123456789012345', null],
    ['+123456', 'E.164'],
    ['+1234567890123456', 'E.164'],
    ['+0650555123', 'E.164'],
    ['6505551234', '"+"'],
    ['00441234567890', '00 prefix'],
    ['+1650555123x', 'E.164'],
    ['whatsapp:+16505551234', '"+"'],
  ])('%j -> %s', (to, expected) => {
    const reason = adapter.checkRecipient(to);
    if (expected === null) expect(reason).toBeNull();
    else expect(reason).toContain(expected);
  });
});

describe('whatsapp adapter: Meta error codes', () => {
  let standIn: StandIn;
  let reply: StandInReply = success;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(() => reply);
    adapter = createWhatsAppAdapter(settings(standIn.url));
  });
  afterAll(() => standIn.close());

  const send = async (next: StandInReply): Promise<SendResult> => {
    reply = next;
    const result = await adapter.send('+16505551234', 'secret message text');
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(JSON.stringify(result)).not.toContain('secret message text');
    return result;
  };

  it.each([
    [4, 400, WHATSAPP_THROTTLE_BACKOFF_MS],
    [80007, 400, WHATSAPP_THROTTLE_BACKOFF_MS],
    [130429, 400, WHATSAPP_THROTTLE_BACKOFF_MS],
    [131056, 400, WHATSAPP_PAIR_BACKOFF_MS],
  ])('code %i (HTTP %i) is a rate limit: retry after %i ms', async (code, status, wait) => {
    expect(await send(metaError(status, code, 'throttled'))).toMatchObject({
      status: 'retry',
      retryAfterMs: wait,
    });
  });

  it('prefers a Retry-After header over the fixed back-off', async () => {
    const throttled = { ...metaError(429, 4, 'Application request limit reached') };
    throttled.headers = { 'retry-after': '12' };
    expect(await send(throttled)).toMatchObject({ status: 'retry', retryAfterMs: 12_000 });
  });

  it.each([1, 2, 131000])(
    'code %i is temporary: retry with the dispatcher back-off',
    async (code) => {
      const result = await send(metaError(503, code, 'Service unavailable'));
      expect(result.status).toBe('retry');
      expect(result).not.toHaveProperty('retryAfterMs');
    },
  );

  it.each([0, 190, 3, 10, 200, 294, 100, 131008, 131009, 131026, 131030, 131047, 131048, 368])(
    'code %i is permanent',
    async (code) => {
      const result = await send(metaError(400, code, 'refused'));
      expect(result.status).toBe('failed');
      expect((result as { reason: string }).reason).toContain(`code ${code}`);
    },
  );

  it('classifies on the code, not the HTTP status (auth error on a 500)', async () => {
    expect((await send(metaError(500, 0, 'AuthException'))).status).toBe('failed');
  });

  it('falls back to the HTTP status for unknown codes and non-JSON answers', async () => {
    expect((await send(metaError(400, 999999, 'new error'))).status).toBe('failed');
    expect((await send(metaError(502, 999999, 'new error'))).status).toBe('retry');
    expect((await send({ status: 502, body: '<html>Bad Gateway</html>' })).status).toBe('retry');
    expect((await send({ status: 404, body: 'Not Found' })).status).toBe('failed');
  });

  it('blanks the token if Meta ever echoes it', async () => {
    const result = await send(metaError(401, 190, `Invalid OAuth access token ${TOKEN}`));
    expect((result as { reason: string }).reason).toContain('***');
  });
});

describe('whatsapp adapter: no answer', () => {
  it('a timeout is a retry that warns of a possible duplicate', async () => {
    const standIn = await startStandIn(() => ({ ...success, delayMs: 2_000 }));
    try {
      const adapter = createWhatsAppAdapter(settings(standIn.url, 150));
      const result = await adapter.send('+16505551234', 'x');
      expect(result.status).toBe('retry');
      expect((result as { reason: string }).reason).toMatch(/150 ms.*duplicate/);
      expect(JSON.stringify(result)).not.toContain(TOKEN);
    } finally {
      await standIn.close();
    }
  });

  it("stops when the caller's signal aborts", async () => {
    const standIn = await startStandIn(() => ({ ...success, delayMs: 2_000 }));
    try {
      const adapter = createWhatsAppAdapter(settings(standIn.url));
      const result = await adapter.send('+16505551234', 'x', AbortSignal.timeout(100));
      expect(result).toMatchObject({
        status: 'retry',
        reason: expect.stringMatching(/interrupted/),
      });
    } finally {
      await standIn.close();
    }
  });
});
