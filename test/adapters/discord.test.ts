/**
 * The Discord adapter against a stand-in of the HTTP API: the shared
 * contract, then the exact Create Message request (`Bot` scheme, user agent,
 * `allowed_mentions` with an empty parse list), snowflake recipients, and
 * classification on Discord's JSON `code` and rate-limit hints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../../engine/delivery/adapter.ts';
import { createDiscordAdapter } from '../../engine/delivery/adapters/discord.ts';
import { describeAdapterContract, type Mode, useAnswerProbe } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const TOKEN = 'MTA5ODc2NTQzMjEwOTg3NjU0Mw.GhIjKl.discord-secret-token';
const CHANNEL = '1098765432109876543';

const settings = (baseUrl: string, timeoutMs = 5_000) => ({ botToken: TOKEN, baseUrl, timeoutMs });

const discordError = (status: number, code: number, message: string): StandInReply => ({
  status,
  body: { message, code },
});

const channelOf = (req: RecordedRequest) =>
  /\/channels\/([^/]+)\/messages$/.exec(req.url)?.[1] ?? '';

const success = (req: RecordedRequest): StandInReply => ({
  status: 200,
  body: {
    id: '1234567890123456789',
    channel_id: channelOf(req),
    type: 0,
    content: (req.json as { content: string }).content,
    author: { id: '1111111111111111111', username: 'hookgate', bot: true },
    timestamp: '2026-11-22T01:00:00.000000+00:00',
    mentions: [],
  },
});

const reply = (mode: Mode, req: RecordedRequest): StandInReply => {
  switch (mode) {
    case 'ok':
      return success(req);
    case 'rate_limited':
      return {
        status: 429,
        headers: {
          'retry-after': '2',
          'x-ratelimit-limit': '5',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset-after': '1.5',
          'x-ratelimit-bucket': 'abcd1234',
          'x-ratelimit-scope': 'user',
        },
        body: { message: 'You are being rate limited.', retry_after: 1.5, global: false },
      };
    case 'server_error':
      return { status: 502, body: '<html><body>502 Bad Gateway</body></html>' };
    case 'auth_failed':
      return discordError(401, 0, '401: Unauthorized');
    case 'bad_recipient':
      return discordError(404, 10003, 'Unknown Channel');
  }
};

describeAdapterContract({
  id: 'discord',
  factory: createDiscordAdapter,
  settings,
  validRecipients: [CHANNEL, '81384788765712384', '18446744073709551615'],
  invalidRecipients: [
    '',
    '1234567890123456',
    '123456789012345678901',
    '#general',
    '<#1098765432109876543>',
    'abc',
  ],
  reply,
  sent: (req) => ({ text: (req.json as { content: string }).content, to: channelOf(req) }),
  rateLimitMs: 1_500,
  secrets: [TOKEN],
});

describe('discord adapter: the Create Message request', () => {
  let standIn: StandIn;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(success);
    adapter = createDiscordAdapter(settings(`${standIn.url}/api/v10/`));
  });
  afterAll(() => standIn.close());

  it('POSTs {content, allowed_mentions, flags} to /channels/{id}/messages with the Bot scheme', async () => {
    const result = await adapter.send(CHANNEL, '@everyone build 17 passed');
    expect(result).toEqual({ status: 'sent', messageId: '1234567890123456789' });
    const req = standIn.requests.at(-1)!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`/api/v10/channels/${CHANNEL}/messages`);
    expect(req.headers.authorization).toBe(`Bot ${TOKEN}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toMatch(/^DiscordBot \(\S+, \S+\)$/);
    expect(req.json).toEqual({
      content: '@everyone build 17 passed',
      allowed_mentions: { parse: [] },
      flags: 4,
    });
  });
});

describe('discord adapter: errors', () => {
  const send = useAnswerProbe((url) => createDiscordAdapter(settings(url)), CHANNEL, [TOKEN]);

  it.each([
    [400, 50035, 'Invalid Form Body'],
    [400, 50006, 'Cannot send an empty message'],
    [401, 0, '401: Unauthorized'],
    [401, 40001, 'Unauthorized'],
    [403, 50001, 'Missing Access'],
    [403, 50013, 'Missing Permissions'],
    [403, 50007, 'Cannot send messages to this user'],
    [404, 10003, 'Unknown Channel'],
  ])('HTTP %i code %i is permanent', async (status, code, message) => {
    const result = await send(discordError(status, code, message));
    expect(result).toEqual({
      status: 'failed',
      reason: expect.stringContaining(`Discord HTTP ${status} code ${code}: ${message}`),
    });
  });

  it('a slowmode 429 with a code retries after retry_after', async () => {
    const slowmode = {
      status: 429,
      body: { message: 'Slowmode', code: 20016, retry_after: 4.25, global: false },
    };
    expect(await send(slowmode)).toMatchObject({ status: 'retry', retryAfterMs: 4_250 });
  });

  it('a 429 without a body wait uses Retry-After, then X-RateLimit-Reset-After', async () => {
    expect(await send({ status: 429, headers: { 'retry-after': '3' }, body: '' })).toMatchObject({
      status: 'retry',
      retryAfterMs: 3_000,
    });
    expect(
      await send({ status: 429, headers: { 'x-ratelimit-reset-after': '0.75' }, body: '' }),
    ).toMatchObject({ status: 'retry', retryAfterMs: 750 });
  });

  it.each([500, 502, 503, 504])('HTTP %i is a retry', async (status) => {
    expect((await send({ status, body: '' })).status).toBe('retry');
  });

  it('blanks the token if Discord ever echoes it', async () => {
    const result = await send(discordError(401, 0, `bad token ${TOKEN}`));
    expect((result as { reason: string }).reason).toContain('***');
  });
});

describe('discord adapter: recipients', () => {
  const adapter = createDiscordAdapter(settings('http://127.0.0.1:9'));
  it.each([
    ['81384788765712384', true],
    ['1098765432109876543', true],
    ['18446744073709551615', true],
    ['1234567890123456', false],
    ['123456789012345678901', false],
    ['@someone', false],
    ['1098765432109876543a', false],
  ])('%j valid: %s', (to, valid) => {
    expect(adapter.checkRecipient(to) === null).toBe(valid);
  });
});
