/**
 * The iMessage adapter against a stand-in of a BlueBubbles server: the
 * shared contract, the exact send-text request (password in the query, a
 * fresh tempGuid), recipient rows and chat GUIDs, and BlueBubbles' error
 * types, with the password never in a reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIMessageAdapter } from '../../engine/delivery/adapters/imessage.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const PASSWORD = 'bb pass&word=S3cr3t';
const ENCODED = encodeURIComponent(PASSWORD);
const PHONE = '+15551234567';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const settings = (url: string) => ({ url, password: PASSWORD, timeoutMs: 2000 });

function bbError(status: number, message: string, type: string, detail: string, data?: unknown) {
  return { status, message, error: { type, message: detail }, ...(data !== undefined && { data }) };
}

function reply(mode: Mode, req: RecordedRequest): StandInReply {
  const body = req.json as { chatGuid: string; tempGuid: string; message: string };
  switch (mode) {
    case 'ok':
      return {
        status: 200,
        body: {
          status: 200,
          message: 'Message sent!',
          data: {
            guid: 'A1B2C3D4-E5F6-7890-ABCD-EF1234567890',
            tempGuid: body.tempGuid,
            text: body.message,
            error: 0,
            dateCreated: 1_700_000_000_000,
          },
        },
      };
    case 'rate_limited':
      // BlueBubbles documents no rate limit; the tunnel in front of the Mac has one.
      return { status: 429, headers: { 'retry-after': '30' }, body: 'Too Many Requests' };
    case 'server_error':
      return { status: 504, body: bbError(504, 'Gateway Timeout', 'Gateway Timeout', 'Timeout') };
    case 'auth_failed':
      return {
        status: 401,
        body: bbError(
          401,
          'You are not authorized to access this resource',
          'Authentication Error',
          'Unauthorized',
        ),
      };
    case 'bad_recipient':
      return {
        status: 500,
        body: bbError(500, 'Message Send Error', 'iMessage Error', 'Message failed to send!', {
          tempGuid: body.tempGuid,
          text: body.message,
          error: 22,
        }),
      };
  }
}

describeAdapterContract({
  id: 'imessage',
  factory: createIMessageAdapter,
  settings,
  validRecipients: [
    PHONE,
    'alice@example.com',
    'iMessage;-;+15551234567',
    'SMS;-;+15551234567',
    'iMessage;-;alice@example.com',
    'iMessage;+;chat123456789012345678',
  ],
  invalidRecipients: [
    '',
    '5551234567',
    'alice',
    'iMessage;-;',
    'iMessage;-;5551234567',
    'WhatsApp;-;+15551234567',
    'iMessage;*;+15551234567',
  ],
  reply,
  sent: (req) => {
    const body = req.json as { chatGuid: string; message: string };
    return { text: body.message, to: body.chatGuid };
  },
  rateLimitMs: 30_000,
  secrets: [PASSWORD, ENCODED],
});

describe('imessage adapter: the documented request and answers', () => {
  let standIn: StandIn;
  beforeAll(async () => {
    standIn = await startStandIn((req) => reply('ok', req));
  });
  afterAll(() => standIn.close());

  const send = async (
    answer: (req: RecordedRequest) => StandInReply,
    to = PHONE,
    text = 'hello there',
  ) => {
    standIn.respond(answer);
    const adapter = createIMessageAdapter(settings(`${standIn.url}/`));
    const before = standIn.requests.length;
    const result = await adapter.send(adapter.normaliseRecipient?.(to) ?? to, text);
    return { result, req: standIn.requests[before] as RecordedRequest };
  };

  it('POSTs /api/v1/message/text?password=... with chatGuid, a fresh tempGuid, message and method', async () => {
    const first = await send((req) => reply('ok', req), PHONE, 'Build passed\nall green');
    expect(first.result).toEqual({
      status: 'sent',
      messageId: 'A1B2C3D4-E5F6-7890-ABCD-EF1234567890',
    });
    expect(first.req.method).toBe('POST');
    expect(first.req.url).toBe(`/api/v1/message/text?password=${ENCODED}`);
    expect(first.req.headers['content-type']).toBe('application/json');
    const body = first.req.json as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['chatGuid', 'message', 'method', 'tempGuid']);
    expect(body).toMatchObject({
      chatGuid: `iMessage;-;${PHONE}`,
      message: 'Build passed\nall green',
      method: 'apple-script',
    });
    expect(body.tempGuid).toMatch(UUID);
    const second = await send((req) => reply('ok', req));
    expect((second.req.json as { tempGuid: string }).tempGuid).not.toBe(body.tempGuid);
  });

  it('splits at 4,000', () => {
    expect(createIMessageAdapter(settings(standIn.url)).maxLength).toBe(4000);
  });

  it.each([
    [PHONE, `iMessage;-;${PHONE}`],
    ['+1 (555) 123-4567', `iMessage;-;${PHONE}`],
    ['bob@example.org', 'iMessage;-;bob@example.org'],
    ['SMS;-;+15551234567', 'SMS;-;+15551234567'],
    ['iMessage;+;chat42', 'iMessage;+;chat42'],
  ])('turns the recipient %j into the chat GUID %j', (to, guid) => {
    const adapter = createIMessageAdapter(settings(standIn.url));
    expect(adapter.checkRecipient(to)).toBeNull();
    expect(adapter.normaliseRecipient?.(to)).toBe(guid);
  });

  it.each([
    ['iMessage;-;bob', 'E.164 phone number or an email'],
    ['+0123456789', 'chat GUID'],
    ['bob@localhost', 'chat GUID'],
    ['iMessage;-;+1 555', 'chat GUID'],
  ])('refuses the recipient %j', (to, problem) => {
    expect(createIMessageAdapter(settings(standIn.url)).checkRecipient(to)).toContain(problem);
  });

  it('does not resend a tempGuid that is already queued', async () => {
    const { result } = await send(() => ({
      status: 400,
      body: bbError(
        400,
        'Message is already queued to be sent! (Temp GUID: 123)',
        'Validation Error',
        'Message is already queued to be sent! (Temp GUID: 123)',
      ),
    }));
    expect(result).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('in flight'),
    });
  });

  it('fails on an iMessage Error without resending or echoing the Mac output', async () => {
    const { result } = await send(
      () => ({
        status: 500,
        body: bbError(
          500,
          'Message Send Error',
          'iMessage Error',
          'execution error: Messages got an error: the quarterly numbers',
        ),
      }),
      PHONE,
      'the quarterly numbers',
    );
    expect(result).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('may or may not'),
    });
    expect(JSON.stringify(result)).not.toContain('quarterly');
  });

  it('fails on a server misconfiguration', async () => {
    const { result } = await send(() => ({
      status: 500,
      body: bbError(500, 'Server Error', 'Server Error', 'No server password has been set!'),
    }));
    expect(result).toMatchObject({
      status: 'failed',
      reason: expect.stringContaining('Server Error'),
    });
  });

  it('retries a tunnel 502 and 503', async () => {
    expect((await send(() => ({ status: 502, body: 'Bad gateway' }))).result.status).toBe('retry');
    expect((await send(() => ({ status: 503 }))).result.status).toBe('retry');
  });

  it('retries a timeout, warning of a duplicate, without the URL or password', async () => {
    standIn.respond((req) => ({ ...reply('ok', req), delayMs: 1500 }));
    const adapter = createIMessageAdapter({ ...settings(standIn.url), timeoutMs: 200 });
    const result = await adapter.send(`iMessage;-;${PHONE}`, 'hello');
    expect(result).toMatchObject({ status: 'retry', reason: expect.stringContaining('duplicate') });
    const text = JSON.stringify(result);
    for (const leak of [PASSWORD, ENCODED, 'password=', standIn.url])
      expect(text).not.toContain(leak);
  });

  it('blanks the password if the server echoes it', async () => {
    const { result } = await send(() => ({
      status: 401,
      body: bbError(401, 'Unauthorized', 'Authentication Error', `bad password ${PASSWORD}`),
    }));
    expect(result.status).toBe('failed');
    expect(JSON.stringify(result)).not.toContain(PASSWORD);
  });
});
