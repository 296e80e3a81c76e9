/**
 * The `discord` channel: Create Message in a channel (snowflake id) with a
 * bot token (`Authorization: Bot …`), mentions disabled so a reply cannot
 * ping @everyone, roles or users, and embeds suppressed so a link in it is
 * not fetched by Discord; errors classified on Discord's JSON `code`.
 */
import type { DiscordSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { withoutMaskedLinks } from '../masked-links.ts';
import { type HttpReply, postJson, retry, secondsToMs } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Discord's limit on `content`. */
export const DISCORD_MAX_LENGTH = 2000;

/** Discord requires `DiscordBot ($url, $versionNumber)`; requests without one may be blocked. */
export const DISCORD_USER_AGENT = 'DiscordBot (hookgate, 0.1.0)';

const SNOWFLAKE = /^[0-9]{17,20}$/;

/**
 * Message flag SUPPRESS_EMBEDS: Discord would fetch every link in the reply to embed it, a URL
 * payload text chose (with whatever the agent wrote into it), before anyone clicks.
 */
export const DISCORD_SUPPRESS_EMBEDS = 1 << 2;

// Slowmode and the channel write limit (sent with a 429).
const RATE_LIMIT_CODES = new Set([20016, 20028]);

const PERMANENT: ReadonlyMap<number, string> = new Map([
  [40001, 'unauthorized: check the bot token'],
  [50035, 'invalid form body'],
  [50006, 'empty message'],
  [50001, 'missing access to the channel'],
  [50013, 'missing permissions in the channel'],
  [50007, 'cannot send messages to this user'],
  [10003, 'unknown channel'],
]);

/** Why `to` is not a Discord channel id, or null when it is. */
export function checkDiscordRecipient(to: string): string | null {
  return SNOWFLAKE.test(to.trim()) ? null : 'expected a Discord channel id (17 to 20 digits)';
}

/** Create the Discord adapter from its validated settings. */
export function createDiscordAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as DiscordSettings;
  const base = s.baseUrl.replace(/\/+$/, '');
  const secrets = [s.botToken, ...urlSecrets(s.baseUrl)];
  return {
    id: 'discord',
    maxLength: DISCORD_MAX_LENGTH,
    checkRecipient: checkDiscordRecipient,
    normaliseRecipient: (to) => to.trim(),
    // Discord renders a bot's `[text](url)` as the text alone.
    prepareText: withoutMaskedLinks,
    async send(to, text, signal) {
      const url = `${base}/channels/${encodeURIComponent(to.trim())}/messages`;
      const outcome = await postJson(
        url,
        { content: text, allowed_mentions: { parse: [] }, flags: DISCORD_SUPPRESS_EMBEDS },
        {
          headers: { authorization: `Bot ${s.botToken}`, 'user-agent': DISCORD_USER_AGENT },
          timeoutMs: s.timeoutMs,
          signal,
        },
      );
      return outcome.result ?? classifyDiscordReply(outcome.reply, secrets);
    },
  };
}

type DiscordAnswer = { id?: unknown; code?: unknown; message?: unknown; retry_after?: unknown };

/** Map a Create Message answer to a send result. */
export function classifyDiscordReply(reply: HttpReply, secrets: readonly string[]): SendResult {
  const json = reply.json as DiscordAnswer | undefined;
  if (reply.status >= 200 && reply.status < 300) {
    return typeof json?.id === 'string'
      ? { status: 'sent', messageId: json.id }
      : { status: 'sent' };
  }
  const code = typeof json?.code === 'number' ? json.code : undefined;
  const said = answerDetail(json?.message, secrets);
  const reason = `Discord HTTP ${reply.status}${code === undefined ? '' : ` code ${code}`}${said ? `: ${said}` : ''}`;
  if (reply.status === 429 || (code !== undefined && RATE_LIMIT_CODES.has(code))) {
    const wait =
      secondsToMs(json?.retry_after) ??
      retryAfterMs(reply.headers['retry-after']) ??
      retryAfterMs(reply.headers['x-ratelimit-reset-after']);
    return retry(reason, wait);
  }
  const meaning = code === undefined ? undefined : PERMANENT.get(code);
  if (meaning) return { status: 'failed', reason: said ? reason : `${reason}: ${meaning}` };
  if (reply.status >= 500) return retry(reason, retryAfterMs(reply.headers['retry-after']));
  if (reply.status === 401) return { status: 'failed', reason: `${reason}: check the bot token` };
  return { status: 'failed', reason };
}
