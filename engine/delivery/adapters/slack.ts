/**
 * The `slack` channel: Web API `chat.postMessage` to a conversation id (and,
 * after a `/`, the ts of the thread to answer in) with a bot token. Slack
 * answers most errors with HTTP 200 and `{"ok":false,"error":"…"}`, so `ok`
 * is always checked and the `error` string, not the status, decides retry or
 * failure.
 */
import type { SlackSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { type HttpReply, postJson, retry } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Slack's recommended maximum for `text` (it truncates past 40,000). */
export const SLACK_MAX_LENGTH = 4000;

// Conversation ids (public, private / multi-party, direct message) and user
// ids (posts into the app's DM with that user). Slack documents no length, so
// only the form is checked: a type letter, then upper-case letters and digits.
const CONVERSATION = /^[CGD][A-Z0-9]{2,}$/;
const USER = /^[UW][A-Z0-9]{2,}$/;
// A thread is its parent message's `ts`: seconds, a dot, a sequence (1712345678.123456).
const THREAD_TS = /^\d{1,16}\.\d{1,16}$/;

const RATE_LIMITED = new Set(['rate_limited', 'ratelimited']);
// The message was not posted: resending is safe.
const TRANSIENT = new Set(['service_unavailable', 'request_timeout', 'team_added_to_org']);
// Slack says part of the operation may have succeeded.
const SERVER_FAILURE = new Set(['internal_error', 'fatal_error']);

// Permanent errors with a hint for the operator; any other `error` is permanent too.
const HINTS: ReadonlyMap<string, string> = new Map([
  ['not_authed', 'check the bot token'],
  ['invalid_auth', 'check the bot token'],
  ['account_inactive', 'check the bot token'],
  ['token_revoked', 'check the bot token'],
  ['missing_scope', 'the token needs the chat:write scope'],
  ['channel_not_found', 'unknown channel, or not visible to the bot'],
  ['not_in_channel', 'invite the bot to the channel'],
  ['is_archived', 'the channel is archived'],
  ['msg_too_long', 'the part is too long'],
]);

/**
 * A reply as plain text: Slack reads `<!channel>`, `<!here>`, `<!everyone>`, `<!subteam^…>` and
 * `<@U…>` in `text` as pings, so `&`, `<` and `>` are escaped as Slack's formatting rules ask for
 * text that is not markup. A reply that payload text steered cannot ping a channel or anyone in it.
 */
export function slackPlainText(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** A recipient read: the conversation and, after a `/`, the thread to answer in. */
export type SlackRecipient = { channel: string; threadTs?: string };

/** The conversation and thread `to` names (`C0123456789` or `C0123456789/1712345678.123456`). */
export function slackRecipient(to: string): SlackRecipient {
  const id = to.trim();
  const slash = id.indexOf('/');
  if (slash < 0) return { channel: id };
  return { channel: id.slice(0, slash), threadTs: id.slice(slash + 1) };
}

/** Why `to` is not a Slack conversation or user id (with an optional thread), or null when it is. */
export function checkSlackRecipient(to: string): string | null {
  const { channel, threadTs } = slackRecipient(to);
  if (threadTs !== undefined && !THREAD_TS.test(threadTs)) {
    return "expected a thread's ts after the channel id (C0123456789/1712345678.123456)";
  }
  if (CONVERSATION.test(channel) || USER.test(channel)) return null;
  if (channel.startsWith('#')) return 'use the channel id (e.g. C0123456789), not its name';
  return 'expected a Slack channel id (C…, G…, D…) or user id (U…, W…), optionally /thread ts';
}

/** Create the Slack adapter from its validated settings. */
export function createSlackAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as SlackSettings;
  const url = `${s.baseUrl.replace(/\/+$/, '')}/chat.postMessage`;
  return {
    id: 'slack',
    maxLength: SLACK_MAX_LENGTH,
    // Counted as sent, entities included (Slack's recommended 4,000 is of the text it gets).
    measure: (part) => slackPlainText(part).length,
    checkRecipient: checkSlackRecipient,
    normaliseRecipient: (to) => to.trim(),
    conversationOf: (to) => slackRecipient(to).channel,
    async send(to, text, signal) {
      const { channel, threadTs } = slackRecipient(to);
      // Escaped per part, after the split (which counts the entities), so no part ends inside
      // an entity.
      const plain = slackPlainText(text);
      // No unfurling: Slack would fetch a URL that payload text put in the reply (with whatever
      // the agent wrote into it) before anyone clicks.
      const message = { channel, text: plain, unfurl_links: false, unfurl_media: false };
      const outcome = await postJson(
        url,
        threadTs === undefined ? message : { ...message, thread_ts: threadTs },
        {
          headers: {
            authorization: `Bearer ${s.botToken}`,
            'content-type': 'application/json; charset=utf-8',
          },
          timeoutMs: s.timeoutMs,
          signal,
        },
      );
      return outcome.result ?? classifySlackReply(outcome.reply);
    },
  };
}

type SlackAnswer = { ok?: unknown; ts?: unknown; error?: unknown };

/** Map a chat.postMessage answer to a send result. */
export function classifySlackReply(reply: HttpReply): SendResult {
  const json = reply.json as SlackAnswer | undefined;
  const wait = retryAfterMs(reply.headers['retry-after']);
  if (reply.status === 429) return retry('Slack HTTP 429: rate limited', wait);
  if (reply.status >= 500) return retry(`Slack HTTP ${reply.status}`, wait);
  // Only a 2xx posted: a redirect (never followed) or a refusal that says `ok` posted nothing.
  if (reply.status >= 200 && reply.status < 300 && json?.ok === true) {
    return typeof json.ts === 'string'
      ? { status: 'sent', messageId: json.ts }
      : { status: 'sent' };
  }
  // Slack's error values are short snake_case codes; anything else is not echoed.
  const error =
    typeof json?.error === 'string' && /^[a-z_]{1,64}$/.test(json.error) ? json.error : '';
  const reason = `Slack HTTP ${reply.status}${error ? `: ${error}` : ''}`;
  if (RATE_LIMITED.has(error)) return retry(reason, wait);
  if (TRANSIENT.has(error)) return retry(reason, wait);
  if (SERVER_FAILURE.has(error)) {
    return retry(`${reason}; Slack may have posted the message, so a retry can duplicate it`, wait);
  }
  const hint =
    HINTS.get(error) ??
    (json?.ok === false
      ? undefined
      : json?.ok === true
        ? '"ok" without a 2xx status: nothing was posted'
        : 'no "ok" in the answer');
  return { status: 'failed', reason: hint ? `${reason} (${hint})` : reason };
}
