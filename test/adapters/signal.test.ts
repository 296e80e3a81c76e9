/**
 * The Signal adapter against a stand-in of signal-cli-rest-api: the shared
 * contract, the exact `/v2/send` request, recipient rows (E.164, UUID,
 * group, username), per-recipient failures in a 201, the captcha 429, and
 * the CLI-timeout 400.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignalAdapter } from '../../engine/delivery/adapters/signal.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const ACCOUNT = '+15550001111';
const PHONE = '+15557654321';
const UUID = '4a1e5d2c-9b7f-4e3a-8c6d-1f2e3d4c5b6a';
const GROUP = 'group.ZmFrZS1ncm91cC1pZC1mb3ItdGVzdHM=';

const settings = (url: string) => ({ url, number: ACCOUNT, timeoutMs: 2000 });

function recipientFailure(reason: string): StandInReply {
  return {
    status: 201,
    body: {
      timestamp: '1700000000001',
      errors: { recipients: [{ number: PHONE, uuid: UUID, username: '', reason }] },
    },
  };
}

function reply(mode: Mode): StandInReply {
  switch (mode) {
    case 'ok':
      return { status: 201, body: { timestamp: '1700000000000' } };
    case 'rate_limited':
      // signal-cli itself names no wait (its 429 is a captcha challenge, tested
      // below); this is the reverse proxy that the docs advise putting in front.
      return {
        status: 429,
        headers: { 'retry-after': '60' },
        body: { error: 'Too Many Requests' },
      };
    case 'server_error':
      return {
        status: 502,
        headers: { 'content-type': 'text/html' },
        body: '<h1>Bad Gateway</h1>',
      };
    case 'auth_failed':
      // The configured sender account is not registered on this signal-cli.
      return { status: 400, body: { error: `User ${ACCOUNT} is not registered.\n` } };
    case 'bad_recipient':
      return recipientFailure('UNREGISTERED_FAILURE');
  }
}

describeAdapterContract({
  id: 'signal',
  factory: createSignalAdapter,
  settings,
  validRecipients: [PHONE, UUID, GROUP, 'alice_bot.42'],
  invalidRecipients: ['', '15557654321', '+0155576543', '+1555', 'group.', 'alice', '@alice'],
  reply,
  sent: (req) => {
    const body = req.json as { message: string; recipients: string[] };
    return { text: body.message, to: body.recipients.join(',') };
  },
  rateLimitMs: 60_000,
  secrets: [],
});

describe('signal adapter: the documented request and answers', () => {
  let standIn: StandIn;
  beforeAll(async () => {
    standIn = await startStandIn(() => reply('ok'));
  });
  afterAll(() => standIn.close());

  const send = async (answer: StandInReply, to = PHONE, text = 'hello there') => {
    standIn.respond(() => answer);
    const adapter = createSignalAdapter(settings(standIn.url));
    const before = standIn.requests.length;
    const result = await adapter.send(adapter.normaliseRecipient?.(to) ?? to, text);
    return { result, req: standIn.requests[before] as RecordedRequest };
  };

  it('POSTs {url}/v2/send with exactly message, number and one recipient', async () => {
    const { result, req } = await send(reply('ok'), PHONE, 'Line one\nline two');
    expect(result).toEqual({ status: 'sent', messageId: '1700000000000' });
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/v2/send');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers.authorization).toBeUndefined();
    expect(req.json).toEqual({
      message: 'Line one\nline two',
      number: ACCOUNT,
      recipients: [PHONE],
    });
  });

  it('sends a group id and a formatted phone number in the form the API wants', async () => {
    expect((await send(reply('ok'), GROUP)).req.json).toMatchObject({ recipients: [GROUP] });
    const formatted = await send(reply('ok'), '+1 (555) 765-4321');
    expect(formatted.req.json).toMatchObject({ recipients: [PHONE] });
  });

  it('splits at 2,000', () => {
    expect(createSignalAdapter(settings(standIn.url)).maxLength).toBe(2000);
  });

  it.each([
    [PHONE, null],
    ['+44 20 7946 0958', null],
    [UUID.toUpperCase(), null],
    ['group.abc+/=', null],
    ['bob.1234', null],
    ['0044207946095', 'country code'],
    ['+12', 'E.164'],
    ['group.not base64', 'E.164 phone number, a Signal UUID'],
    ['ab.12', 'username'],
  ])('checks the recipient %j', (to, problem) => {
    const result = createSignalAdapter(settings(standIn.url)).checkRecipient(to);
    if (problem === null) expect(result).toBeNull();
    else expect(result).toContain(problem);
  });

  it.each(['UNREGISTERED_FAILURE', 'IDENTITY_FAILURE', 'INVALID_PRE_KEY_FAILURE'])(
    'fails permanently on a per-recipient %s in a 201',
    async (why) => {
      const { result } = await send(recipientFailure(why));
      expect(result).toMatchObject({ status: 'failed', reason: expect.stringContaining(why) });
    },
  );

  it.each(['NETWORK_FAILURE', 'RATE_LIMIT_FAILURE'])(
    'retries a per-recipient %s in a 201',
    async (why) => {
      expect((await send(recipientFailure(why))).result.status).toBe('retry');
    },
  );

  it('fails on the captcha 429 and says a person must solve the challenge', async () => {
    const { result } = await send({
      status: 429,
      body: {
        error:
          "Failed to send message due to rate limiting. Use the attached challenge tokens to lift the rate limit restrictions via the '/v1/accounts/{number}/rate-limit-challenge' endpoint.",
        challenge_tokens: ['c0ffee-token'],
        account: ACCOUNT,
      },
    });
    expect(result).toMatchObject({ status: 'failed', reason: expect.stringContaining('captcha') });
    expect(JSON.stringify(result)).not.toContain('c0ffee-token');
  });

  it('fails permanently on a 400 for an unregistered recipient', async () => {
    const { result } = await send({
      status: 400,
      body: { error: `Failed to send message: ${PHONE}: Unregistered user` },
    });
    expect(result).toMatchObject({ status: 'failed', reason: expect.stringContaining('HTTP 400') });
  });

  it('retries the CLI timeout 400, warning of a possible duplicate', async () => {
    const { result } = await send({
      status: 400,
      body: { error: 'process killed as timeout reached' },
    });
    expect(result).toMatchObject({ status: 'retry', reason: expect.stringContaining('duplicate') });
  });

  it('retries a 500', async () => {
    const { result } = await send({ status: 500, body: { error: 'internal error' } });
    expect(result.status).toBe('retry');
  });

  it('never puts the text in a reason', async () => {
    const { result } = await send(reply('bad_recipient'), PHONE, 'the secret plan');
    expect(JSON.stringify(result)).not.toContain('secret plan');
  });
});
