/**
 * The `telegram` channel: Bot API `sendMessage` (plain text, no parse_mode,
 * no link preview) to a chat id or @username. The bot token is in the URL path, so no URL
 * and no product text that could echo it ever reaches a reason.
 */
import type { TelegramSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { type HttpReply, postJson, retry, secondsToMs } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Telegram's limit on `text` (after entity parsing; we send none). */
export const TELEGRAM_MAX_LENGTH = 4096;

const CHAT_ID = /^-?[0-9]{1,16}$/;
const USERNAME = /^@[A-Za-z][A-Za-z0-9_]{4,31}$/;

/** Why `to` is not a Telegram chat id or @username, or null when it is. */
export function checkTelegramRecipient(to: string): string | null {
  const chat = to.trim();
  if (USERNAME.test(chat)) return null;
  if (CHAT_ID.test(chat)) return null;
  return 'expected a numeric chat id (e.g. 123456789 or -1001234567890) or an @username';
}

/** The chat id as sent: a JSON number when it is a safe integer, else the string. */
export function telegramChatId(to: string): number | string {
  const chat = to.trim();
  if (!CHAT_ID.test(chat)) return chat;
  const id = Number(chat);
  return Number.isSafeInteger(id) ? id : chat;
}

type TelegramAnswer = {
  ok?: unknown;
  result?: { message_id?: unknown };
  error_code?: unknown;
  description?: unknown;
  parameters?: { retry_after?: unknown; migrate_to_chat_id?: unknown };
};

/** Create the Telegram adapter from its validated settings. */
export function createTelegramAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as TelegramSettings;
  // Secret: the token is in the path. Never put this URL in a reason or a log.
  const url = `${s.baseUrl.replace(/\/+$/, '')}/bot${s.botToken}/sendMessage`;
  const secrets = [s.botToken, ...urlSecrets(s.baseUrl)];
  const post = async (
    chatId: number | string,
    text: string,
    signal?: AbortSignal,
  ): Promise<Classified> => {
    // No link preview: Telegram's servers would fetch a URL that payload text put in the reply
    // (with whatever the agent wrote into it) before anyone clicks.
    const outcome = await postJson(
      url,
      { chat_id: chatId, text, link_preview_options: { is_disabled: true } },
      { headers: {}, timeoutMs: s.timeoutMs, signal },
    );
    return outcome.result ?? classifyTelegramReply(outcome.reply, secrets);
  };
  return {
    id: 'telegram',
    maxLength: TELEGRAM_MAX_LENGTH,
    checkRecipient: checkTelegramRecipient,
    normaliseRecipient: (to) => to.trim(),
    async send(to, text, signal) {
      const first = await post(telegramChatId(to), text, signal);
      if (first.status !== 'migrate') return first;
      // The group became a supergroup: the message was refused, so resending is
      // safe. Re-target once and say where it went, so the new id is recorded.
      const second = await post(first.migrateTo, text, signal);
      if (second.status === 'migrate') return { status: 'failed', reason: second.reason };
      return second.status === 'sent'
        ? { ...second, movedTo: String(first.migrateTo) }
        : { ...second, reason: `${second.reason} (after moving to chat ${first.migrateTo})` };
    },
  };
}

/** A send result, or "the group moved: send again to `migrateTo`". */
export type Classified =
  | SendResult
  | { status: 'migrate'; reason: string; migrateTo: number | string };

/**
 * The chat id a migration answer names (a numeric chat id), or undefined when it is not one;
 * the delivery checks it as a configured recipient before it is sent to (deliver.ts).
 */
export function movedChatId(value: unknown): string | undefined {
  const chat = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : value;
  return typeof chat === 'string' && CHAT_ID.test(chat) ? chat : undefined;
}

/** Map a Bot API answer to a send result (or a chat migration to follow). */
export function classifyTelegramReply(reply: HttpReply, secrets: readonly string[]): Classified {
  const json = reply.json as TelegramAnswer | undefined;
  if (reply.status >= 200 && reply.status < 300 && json?.ok !== false) {
    const id = json?.result?.message_id;
    return typeof id === 'number' || typeof id === 'string'
      ? { status: 'sent', messageId: String(id) }
      : { status: 'sent' };
  }
  const said = answerDetail(json?.description, secrets);
  const reason = `Telegram HTTP ${reply.status}${said ? `: ${said}` : ''}`;
  const migrateTo = json?.parameters?.migrate_to_chat_id;
  if (migrateTo !== undefined && migrateTo !== null) {
    const chat = movedChatId(migrateTo);
    // Not a chat id: nothing is resent and no route takes it; the operator looks at the chat.
    if (chat === undefined)
      return {
        status: 'failed',
        reason: `${reason} (the chat moved, but the answer names no valid chat id; not resent)`,
      };
    return {
      status: 'migrate',
      reason: `${reason} (the chat moved to ${chat}; update the recipient)`,
      migrateTo: telegramChatId(chat),
    };
  }
  if (reply.status === 429) {
    const wait =
      secondsToMs(json?.parameters?.retry_after) ?? retryAfterMs(reply.headers['retry-after']);
    return retry(reason, wait);
  }
  if (reply.status >= 500) return retry(reason, retryAfterMs(reply.headers['retry-after']));
  if (reply.status === 401) return { status: 'failed', reason: `${reason} (bot token rejected)` };
  if (reply.status === 404) {
    return { status: 'failed', reason: `${reason} (check the bot token and baseUrl)` };
  }
  return { status: 'failed', reason };
}
