/**
 * The Telegram adapter against a stand-in of the Bot API: the shared
 * contract, then the exact sendMessage request (token in the path, no auth
 * header, chat_id as a number, no parse_mode), recipients, the 429
 * retry_after hint, group-to-supergroup migration, and the token never
 * reaching a reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter, SendResult } from '../../engine/delivery/adapter.ts';
import { createTelegramAdapter } from '../../engine/delivery/adapters/telegram.ts';
import { describeAdapterContract, type Mode } from '../delivery-contract.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from '../helpers/stand-in.ts';

const TOKEN = '123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11';

const settings = (baseUrl: string, timeoutMs = 5_000) => ({
  botToken: TOKEN,
  baseUrl,
  timeoutMs,
});

const botError = (
  status: number,
  description: string,
  parameters?: Record<string, unknown>,
): StandInReply => ({
  status,
  body: { ok: false, error_code: status, description, ...(parameters && { parameters }) },
});

const success = (req: RecordedRequest): StandInReply => {
  const body = req.json as { chat_id: number | string; text: string };
  return {
    status: 200,
    body: {
      ok: true,
      result: {
        message_id: 4711,
        from: { id: 123456, is_bot: true, first_name: 'hookgate', username: 'hookgate_bot' },
        chat: { id: body.chat_id, type: 'private' },
        date: 1_790_000_000,
        text: body.text,
      },
    },
  };
};

const reply = (mode: Mode, req: RecordedRequest): StandInReply => {
  switch (mode) {
    case 'ok':
      return success(req);
    case 'rate_limited':
      return {
        ...botError(429, 'Too Many Requests: retry after 7', { retry_after: 7 }),
        headers: { 'retry-after': '7' },
      };
    case 'server_error':
      return botError(502, 'Bad Gateway');
    case 'auth_failed':
      return botError(401, 'Unauthorized');
    case 'bad_recipient':
      return botError(400, 'Bad Request: chat not found');
  }
};

describeAdapterContract({
  id: 'telegram',
  factory: createTelegramAdapter,
  settings,
  validRecipients: ['123456789', '-1001234567890', '-4012345678', '@hookgate_news'],
  invalidRecipients: [
    '',
    'abc',
    '12345678901234567',
    '1.5',
    '1e9',
    '@abc',
    '@1channel',
    'hookgate_news',
    '@hook gate',
  ],
  reply,
  sent: (req) => {
    const body = req.json as { chat_id: number | string; text: string };
    return { text: body.text, to: String(body.chat_id) };
  },
  rateLimitMs: 7_000,
  secrets: [TOKEN],
});

describe('telegram adapter: the sendMessage request', () => {
  let standIn: StandIn;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(success);
    adapter = createTelegramAdapter(settings(`${standIn.url}/`));
  });
  afterAll(() => standIn.close());

  const last = () => standIn.requests.at(-1)!;

  it('POSTs JSON to /bot{token}/sendMessage, with no auth header, no parse_mode and no link preview', async () => {
    const result = await adapter.send('123456789', 'Build *17* <passed>');
    expect(result).toEqual({ status: 'sent', messageId: '4711' });
    const req = last();
    expect(req.method).toBe('POST');
    expect(req.url).toBe(`/bot${TOKEN}/sendMessage`);
    expect(req.headers.authorization).toBeUndefined();
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.raw).toBe(
      '{"chat_id":123456789,"text":"Build *17* <passed>","link_preview_options":{"is_disabled":true}}',
    );
  });

  it.each([
    ['-1001234567890', -1001234567890],
    ['9007199254740991', 9007199254740991],
    ['9007199254740993', '9007199254740993'],
    ['@hookgate_news', '@hookgate_news'],
    [' 42 ', 42],
  ])('sends the recipient %j as chat_id %j', async (to, chatId) => {
    await adapter.send(adapter.normaliseRecipient?.(to) ?? to, 'x');
    expect((last().json as { chat_id: unknown }).chat_id).toStrictEqual(chatId);
  });
});

describe('telegram adapter: errors', () => {
  let standIn: StandIn;
  let handler: (req: RecordedRequest) => StandInReply = success;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn((req) => handler(req));
    adapter = createTelegramAdapter(settings(standIn.url));
  });
  afterAll(() => standIn.close());

  const send = async (next: (req: RecordedRequest) => StandInReply): Promise<SendResult> => {
    handler = next;
    const result = await adapter.send('-123456789', 'secret message text');
    expect(JSON.stringify(result)).not.toContain(TOKEN);
    expect(JSON.stringify(result)).not.toContain('secret message text');
    return result;
  };

  it('takes the wait from parameters.retry_after, else from Retry-After', async () => {
    expect(
      await send(() => botError(429, 'Too Many Requests: retry after 3', { retry_after: 3 })),
    ).toEqual({
      status: 'retry',
      reason: 'Telegram HTTP 429: Too Many Requests: retry after 3',
      retryAfterMs: 3_000,
    });
    expect(
      await send(() => ({
        ...botError(429, 'Too Many Requests'),
        headers: { 'retry-after': '5' },
      })),
    ).toMatchObject({ status: 'retry', retryAfterMs: 5_000 });
  });

  it.each([
    [401, 'Unauthorized'],
    [404, 'Not Found'],
    [400, 'Bad Request: chat not found'],
    [400, 'Bad Request: message text is empty'],
    [400, 'Bad Request: message is too long'],
    [403, 'Forbidden: bot was blocked by the user'],
    [403, 'Forbidden: bot was kicked from the group chat'],
    [403, 'Forbidden: user is deactivated'],
  ])('HTTP %i %j is permanent', async (status, description) => {
    const result = await send(() => botError(status, description));
    expect(result.status).toBe('failed');
    expect((result as { reason: string }).reason).toContain(description);
  });

  it.each([500, 502, 503, 504])('HTTP %i is a retry', async (status) => {
    expect((await send(() => ({ status, body: 'upstream trouble' }))).status).toBe('retry');
  });

  it('re-targets once to migrate_to_chat_id, says where it went, and reports the move when it fails again', async () => {
    const before = standIn.requests.length;
    const migrated = botError(400, 'Bad Request: group chat was upgraded to a supergroup chat', {
      migrate_to_chat_id: -1001234567890,
    });
    const result = await send((req) =>
      (req.json as { chat_id: number }).chat_id === -123456789 ? migrated : success(req),
    );
    expect(result).toEqual({ status: 'sent', messageId: '4711', movedTo: '-1001234567890' });
    const requests = standIn.requests.slice(before);
    expect(requests.map((r) => (r.json as { chat_id: number }).chat_id)).toEqual([
      -123456789, -1001234567890,
    ]);

    const again = await send(() => migrated);
    expect(again.status).toBe('failed');
    expect((again as { reason: string }).reason).toContain('-1001234567890');
    expect(standIn.requests.length - before).toBe(4);
  });

  it('says where it moved when the re-targeted send also fails', async () => {
    const result = await send((req) =>
      (req.json as { chat_id: number }).chat_id === -123456789
        ? botError(400, 'Bad Request: group chat was upgraded to a supergroup chat', {
            migrate_to_chat_id: -1009876543210,
          })
        : botError(403, 'Forbidden: bot is not a member of the supergroup chat'),
    );
    expect(result.status).toBe('failed');
    expect((result as { reason: string }).reason).toMatch(/not a member.*-1009876543210/);
  });

  it('never shows the token, even when the product echoes it', async () => {
    const result = await send(() => botError(404, `Not Found: /bot${TOKEN}/sendMessage`));
    expect((result as { reason: string }).reason).toContain('/bot***/sendMessage');
  });

  it('a timeout is a retry without the token-bearing URL', async () => {
    const slow = await startStandIn((req) => ({ ...success(req), delayMs: 2_000 }));
    try {
      const result = await createTelegramAdapter(settings(slow.url, 150)).send('1', 'x');
      expect(result).toMatchObject({ status: 'retry', reason: expect.stringMatching(/duplicate/) });
      expect(JSON.stringify(result)).not.toContain(TOKEN);
      expect(JSON.stringify(result)).not.toContain(slow.url);
    } finally {
      await slow.close();
    }
  });
});
