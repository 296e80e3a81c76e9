/**
 * The `mattermost` channel: a post to a channel id through the Mattermost
 * REST API v4 (`POST {url}/api/v4/posts`), classifying the answer on the
 * HTTP status and Mattermost's error `id` into retry or permanent failure;
 * the reply goes without mentions, inline images or masked links.
 */
import type { MattermostSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerCode, answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { withoutMaskedLinks } from '../masked-links.ts';
import { type HttpReply, postJson } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/**
 * The server's default maximum post size, in runes (code points). Counting
 * UTF-16 code units, as the splitter does, never undercounts runes. Servers
 * with an old database schema take only 4,000 runes: they answer
 * `message_length`, reported as "re-split".
 */
export const MATTERMOST_MAX_LENGTH = 16_383;

const CHANNEL_ID = /^[a-z0-9]{26}$/;
// Mattermost's error ids: dotted snake_case keys (`api.context.invalid_param.app_error`).
const ERROR_ID = /^[a-z][a-z0-9_.]{0,127}$/;

// A mention: `@` not after a letter or digit, then a character a user or group name may start
// with. Mattermost trims a word's leading `:.-_` and splits it again at `.`, `-` and `:`, so
// `-@channel` and `note.@all` page the channel; an `@` after a letter or digit
// (`ada@example.com`) mentions no one and stays as it is.
const MENTION = /(?<![\p{L}\p{N}])@(?=[\p{L}\p{N}_.-])/gu;

/**
 * A reply that notifies no one: a zero-width space after the `@` of every mention splits the word
 * Mattermost looks for (it reads as before). `@channel`, `@all` and `@here` page a whole channel,
 * and a custom group's `@name` reads like a person's, so a reply that payload text steered could
 * page any of them; as on Slack, where replies go as plain text, hookgate's replies mention no one.
 */
export function withoutMentions(text: string): string {
  return text.replace(MENTION, '@\u200b');
}

/**
 * A reply whose images stay links: Mattermost loads an image in a post (its server for the post's
 * metadata, every reader's client to show it), a URL that payload text chose, with whatever the
 * agent wrote into it, before anyone clicks. A zero-width space between `!` and `[` leaves a link
 * that reads the same.
 */
export function withoutRemoteImages(text: string): string {
  // Markdown's image syntax, inline `![a](url)` or by reference `![a][1]`: `!` right before `[`.
  return text.split('![').join('!\u200b[');
}

/**
 * The reply as Mattermost gets it: no mention, no image loaded unasked, no link
 * whose text hides where it leads.
 */
export function mattermostText(text: string): string {
  return withoutMaskedLinks(withoutRemoteImages(withoutMentions(text)));
}

/** Why `to` is not a Mattermost channel id, or null when it is. */
export function checkMattermostRecipient(to: string): string | null {
  if (CHANNEL_ID.test(to)) return null;
  if (/^[A-Za-z0-9]{26}$/.test(to)) return 'Mattermost channel ids are lower case';
  return 'expected a Mattermost channel id: 26 lower-case letters and digits';
}

/** Create the Mattermost adapter from its validated settings. */
export function createMattermostAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as MattermostSettings;
  const url = `${s.url.replace(/\/+$/, '')}/api/v4/posts`;
  const secrets = [s.token, ...urlSecrets(s.url)];
  return {
    id: 'mattermost',
    maxLength: MATTERMOST_MAX_LENGTH,
    checkRecipient: checkMattermostRecipient,
    prepareText: mattermostText,
    async send(to, text, signal) {
      const outcome = await postJson(
        url,
        { channel_id: to, message: text },
        { headers: { authorization: `Bearer ${s.token}` }, timeoutMs: s.timeoutMs, signal },
      );
      return outcome.result ?? classifyMattermostReply(outcome.reply, secrets);
    },
  };
}

type MattermostError = { id?: unknown; message?: unknown };

/** Map a Mattermost answer to a send result. */
export function classifyMattermostReply(reply: HttpReply, secrets: readonly string[]): SendResult {
  if (reply.status >= 200 && reply.status < 300) {
    const id = (reply.json as { id?: unknown } | undefined)?.id;
    return typeof id === 'string' ? { status: 'sent', messageId: id } : { status: 'sent' };
  }
  const error = (reply.json ?? {}) as MattermostError;
  // Only an id of the id's shape is echoed: any other text could carry the token, or be huge.
  const errorId = answerCode(error.id, ERROR_ID);
  const said = answerDetail(error.message, secrets);
  const base = `Mattermost HTTP ${reply.status}${errorId ? ` (${errorId})` : ''}`;
  const explain = (what: string) => `${base}: ${what}${said ? ` (${said})` : ''}`;
  if (reply.status === 429) {
    return withWait(explain('rate limited'), rateLimitWaitMs(reply));
  }
  if (reply.status >= 500) return { status: 'retry', reason: explain('server error') };
  return { status: 'failed', reason: explain(refusal(reply.status, errorId)) };
}

function refusal(status: number, errorId: string | undefined): string {
  if (errorId?.includes('message_length')) return 'message too long for this server; re-split';
  if (status === 401) return 'token rejected';
  if (status === 403) return 'no permission to post in this channel (is the bot a member?)';
  if (status === 404) return 'not found';
  if (errorId === 'api.context.invalid_param.app_error')
    return 'invalid parameter (unknown channel?)';
  return 'request refused';
}

// `Retry-After` (seconds) first; else `X-Ratelimit-Reset`, seconds until the reset.
function rateLimitWaitMs(reply: HttpReply): number | undefined {
  const retryAfter = retryAfterMs(reply.headers['retry-after']);
  if (retryAfter !== undefined) return retryAfter;
  const reset = reply.headers['x-ratelimit-reset'];
  const text = (Array.isArray(reset) ? reset[0] : reset)?.trim();
  return text && /^\d+$/.test(text) ? Number(text) * 1000 : undefined;
}

function withWait(reason: string, retryAfterMs: number | undefined): SendResult {
  return retryAfterMs === undefined
    ? { status: 'retry', reason }
    : { status: 'retry', reason, retryAfterMs };
}
