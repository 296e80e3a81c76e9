/**
 * The Slack adapter against a stand-in of the Web API: the shared contract,
 * then the exact chat.postMessage request (Bearer token, JSON with charset,
 * {channel, text}), recipients, and `ok:false` answers on HTTP 200
 * classified on the `error` string.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../../engine/delivery/adapter.ts';
import { createSlackAdapter } from '../../engine/delivery/adapters/slack.ts';
import { describeAdapterContract, type Mode, useAnswerProbe } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const TOKEN = 'xoxb-1234567890-0987654321-slacksecrettoken';
const CHANNEL = 'C0123456789';

const settings = (baseUrl: string, timeoutMs = 5_000) => ({ botToken: TOKEN, baseUrl, timeoutMs });

const slackError = (error: string, status = 200): StandInReply => ({
  status,
  body: { ok: false, error },
});

const success = (req: RecordedRequest): StandInReply => {
  const body = req.json as { channel: string; text: string };
  return {
    status: 200,
    body: {
      ok: true,
      channel: body.channel,
      ts: '1503435956.000247',
      message: { type: 'message', text: body.text, bot_id: 'B0123456789', ts: '1503435956.000247' },
    },
  };
};

const reply = (mode: Mode, req: RecordedRequest): StandInReply => {
  switch (mode) {
    case 'ok':
      return success(req);
    case 'rate_limited':
      return { ...slackError('ratelimited', 429), headers: { 'retry-after': '30' } };
    case 'server_error':
      return { status: 503, body: 'Service Unavailable' };
    case 'auth_failed':
      return slackError('invalid_auth');
    case 'bad_recipient':
      return slackError('channel_not_found');
  }
};

describeAdapterContract({
  id: 'slack',
  factory: createSlackAdapter,
  settings,
  validRecipients: [CHANNEL, 'G01234567', 'D0123ABCDE', 'U012AB3CD', 'W0123456789', 'C0123'],
  invalidRecipients: [
    '',
    '#general',
    'general',
    'C0',
    'c0123456789',
    'X0123456789',
    'C0123 456789',
  ],
  reply,
  sent: (req) => {
    const body = req.json as { channel: string; text: string };
    return { text: body.text, to: body.channel };
  },
  rateLimitMs: 30_000,
  secrets: [TOKEN],
});

describe('slack adapter: the chat.postMessage request', () => {
  let standIn: StandIn;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(success);
    adapter = createSlackAdapter(settings(`${standIn.url}/api/`));
  });
  afterAll(() => standIn.close());

  it('POSTs {channel, text} as UTF-8 JSON with a Bearer token and keeps ts as the id', async () => {
    const result = await adapter.send(CHANNEL, 'Build 17 passed');
    expect(result).toEqual({ status: 'sent', messageId: '1503435956.000247' });
    const req = standIn.requests.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/api/chat.postMessage');
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(req.json).toEqual({
      channel: CHANNEL,
      text: 'Build 17 passed',
      unfurl_links: false,
      unfurl_media: false,
    });
  });

  it('a reply saying <!channel>, <!here>, <!subteam^…> or <@U…> pings nobody: & < > are escaped', async () => {
    await adapter.send(CHANNEL, 'ALERT <!channel> <!here|here> <!subteam^S0123|ops> <@U0ADA> & co');
    expect(standIn.requests.at(-1)?.json).toEqual({
      channel: CHANNEL,
      text: 'ALERT &lt;!channel&gt; &lt;!here|here&gt; &lt;!subteam^S0123|ops&gt; &lt;@U0ADA&gt; &amp; co',
      unfurl_links: false,
      unfurl_media: false,
    });
  });

  it('answers in a thread named after the channel id: {channel, text, thread_ts}', async () => {
    const result = await adapter.send(` ${CHANNEL}/1712345678.123456 `, 'done');
    expect(result.status).toBe('sent');
    expect(standIn.requests.at(-1)?.json).toEqual({
      channel: CHANNEL,
      text: 'done',
      unfurl_links: false,
      unfurl_media: false,
      thread_ts: '1712345678.123456',
    });
  });
});

describe('slack adapter: ok:false answers', () => {
  const send = useAnswerProbe((url) => createSlackAdapter(settings(url)), CHANNEL, [TOKEN]);

  it.each([
    'not_authed',
    'invalid_auth',
    'account_inactive',
    'token_revoked',
    'missing_scope',
    'no_permission',
    'channel_not_found',
    'not_in_channel',
    'is_archived',
    'restricted_action',
    'restricted_action_read_only_channel',
    'msg_too_long',
    'no_text',
    'invalid_arguments',
    'some_future_error',
  ])('HTTP 200 error %j is permanent', async (error) => {
    expect(await send(slackError(error))).toEqual({
      status: 'failed',
      reason: expect.stringContaining(`Slack HTTP 200: ${error}`),
    });
  });

  it('a rate_limited answer is a retry, with Retry-After when given', async () => {
    expect(await send(slackError('rate_limited'))).toEqual({
      status: 'retry',
      reason: 'Slack HTTP 200: rate_limited',
    });
    expect(
      await send({ ...slackError('rate_limited'), headers: { 'retry-after': '2' } }),
    ).toMatchObject({ status: 'retry', retryAfterMs: 2_000 });
  });

  it('HTTP 429 is a retry after Retry-After, whatever the body', async () => {
    expect(await send({ status: 429, headers: { 'retry-after': '1' }, body: '' })).toMatchObject({
      status: 'retry',
      retryAfterMs: 1_000,
    });
  });

  it.each(['internal_error', 'fatal_error'])(
    '%s is a retry that warns of a possible duplicate',
    async (error) => {
      const result = await send(slackError(error));
      expect(result).toMatchObject({ status: 'retry', reason: expect.stringMatching(/duplicate/) });
    },
  );

  it.each(['service_unavailable', 'request_timeout'])('%s is a retry', async (error) => {
    expect((await send(slackError(error))).status).toBe('retry');
  });

  it.each([500, 502, 503, 504])('HTTP %i is a retry', async (status) => {
    expect((await send({ status, body: '<html>oops</html>' })).status).toBe('retry');
  });

  it('refuses an answer without ok, and does not echo odd error values', async () => {
    expect((await send({ status: 200, body: '<html>login</html>' })).status).toBe('failed');
    const odd = await send(slackError(`weird ${TOKEN} value`));
    expect(odd).toEqual({ status: 'failed', reason: 'Slack HTTP 200' });
  });
});

describe('slack adapter: recipients', () => {
  const adapter = createSlackAdapter(settings('http://127.0.0.1:9'));
  it.each([
    ['C0123456789', null],
    ['G01234567', null],
    ['D0123ABCDE', null],
    ['U012AB3CD', null],
    ['W0123456789', null],
    ['C0123456', null],
    ['C0123456789/1712345678.123456', null],
    ['D0123ABCDE/1712345678.000100', null],
    ['C0123456789/', "thread's ts"],
    ['C0123456789/p1712345678123456', "thread's ts"],
    ['C0123456789/1712345678.1/2', "thread's ts"],
    ['C0123456789/1712345678.123456 x', "thread's ts"],
    ['#general/1712345678.123456', 'not its name'],
    ['/1712345678.123456', 'channel id'],
    ['C', 'channel id'],
    ['#general', 'not its name'],
    ['c0123456789', 'channel id'],
    ['T0123456789', 'channel id'],
  ])('%j -> %s', (to, expected) => {
    const reason = adapter.checkRecipient(to);
    if (expected === null) expect(reason).toBeNull();
    else expect(reason).toContain(expected);
  });
});
