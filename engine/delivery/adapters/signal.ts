/**
 * The `signal` channel: a message through signal-cli-rest-api
 * (`POST {url}/v2/send`) from the configured account to one phone number,
 * UUID, group or username. signal-cli answers 400 for nearly every refusal,
 * 429 with a captcha challenge when Signal rate-limits the account, and a
 * 201 that can still list per-recipient failures.
 */
import type { SignalSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerCode, answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { type HttpReply, postJson } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Not documented; Signal clients turn longer bodies into attachments, so we split at 2,000. */
export const SIGNAL_MAX_LENGTH = 2000;

const E164 = /^\+[1-9][0-9]{6,14}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const GROUP = /^group\.[A-Za-z0-9+/=]+$/;
const USERNAME = /^[A-Za-z0-9_]{3,32}\.[0-9]{2,10}$/;

// signal-cli's per-recipient results (`UNREGISTERED_FAILURE`): only this shape is echoed.
const RECIPIENT_RESULT = /^[A-Z][A-Z_]{0,63}$/;
// Most distinct per-recipient results named in a reason (one recipient is sent to).
const MAX_RECIPIENT_RESULTS = 4;

// Per-recipient results after which sending again can work.
const RETRYABLE_RECIPIENT = new Set(['NETWORK_FAILURE', 'RATE_LIMIT_FAILURE']);

/** A phone number without spaces, hyphens, dots and parentheses; a UUID in lower case. */
export function normaliseSignalRecipient(to: string): string {
  const trimmed = to.trim();
  if (trimmed.startsWith('+')) return trimmed.replace(/[\s\-.()]/g, '');
  if (UUID.test(trimmed.toLowerCase())) return trimmed.toLowerCase();
  return trimmed;
}

/** Why `to` is not a Signal recipient (E.164, UUID, `group.<base64>`, username), or null. */
export function checkSignalRecipient(to: string): string | null {
  const id = normaliseSignalRecipient(to);
  if ([E164, UUID, GROUP, USERNAME].some((form) => form.test(id))) return null;
  if (id.startsWith('+')) return 'expected an E.164 phone number: "+", then 7 to 15 digits';
  if (/^[0-9]/.test(id)) return 'phone numbers need "+" and the country code';
  return 'expected an E.164 phone number, a Signal UUID, "group.<base64 id>" or a username like "name.42"';
}

/** Create the Signal adapter from its validated settings. */
export function createSignalAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as SignalSettings;
  const url = `${s.url.replace(/\/+$/, '')}/v2/send`;
  const secrets = urlSecrets(s.url);
  return {
    id: 'signal',
    maxLength: SIGNAL_MAX_LENGTH,
    checkRecipient: checkSignalRecipient,
    normaliseRecipient: normaliseSignalRecipient,
    async send(to, text, signal) {
      const body = { message: text, number: s.number, recipients: [normaliseSignalRecipient(to)] };
      const outcome = await postJson(url, body, { headers: {}, timeoutMs: s.timeoutMs, signal });
      return outcome.result ?? classifySignalReply(outcome.reply, secrets);
    },
  };
}

type SignalAnswer = {
  timestamp?: unknown;
  error?: unknown;
  challenge_tokens?: unknown;
  errors?: { recipients?: Array<{ reason?: unknown }> };
};

/** Map a signal-cli-rest-api answer to a send result. */
export function classifySignalReply(reply: HttpReply, secrets: readonly string[] = []): SendResult {
  const json = (reply.json ?? {}) as SignalAnswer;
  if (reply.status >= 200 && reply.status < 300) return sentOrRecipientFailure(json);
  const said = answerDetail(json.error, secrets);
  const explain = (what: string) =>
    `Signal HTTP ${reply.status}: ${what}${said ? ` (${said})` : ''}`;
  if (reply.status === 429) return rateLimited(reply, json, explain);
  if (reply.status >= 500) return { status: 'retry', reason: explain('server error') };
  if (reply.status === 400 && typeof json.error === 'string' && /timeout/i.test(json.error)) {
    // signal-cli was killed mid-call: it may have sent the message.
    const what =
      'signal-cli timed out; the message may have been sent, so a retry can duplicate it';
    return { status: 'retry', reason: explain(what) };
  }
  if (reply.status === 401 || reply.status === 403) {
    return { status: 'failed', reason: explain('refused by the proxy in front of the API') };
  }
  return { status: 'failed', reason: explain('request refused') };
}

function sentOrRecipientFailure(json: SignalAnswer): SendResult {
  const failures = Array.isArray(json.errors?.recipients) ? json.errors.recipients : [];
  const reasons = [
    ...new Set(failures.map((f) => answerCode(f?.reason, RECIPIENT_RESULT) ?? 'UNKNOWN')),
  ];
  if (reasons.length === 0) {
    const stamp = json.timestamp;
    const id = typeof stamp === 'string' || typeof stamp === 'number' ? String(stamp) : undefined;
    return id ? { status: 'sent', messageId: id } : { status: 'sent' };
  }
  const named = reasons.slice(0, MAX_RECIPIENT_RESULTS).join(', ');
  const more = reasons.length > MAX_RECIPIENT_RESULTS ? ', …' : '';
  const reason = `Signal recipient failed: ${named}${more}`;
  if (reasons.every((r) => RETRYABLE_RECIPIENT.has(r))) return { status: 'retry', reason };
  return { status: 'failed', reason: `${reason}${recipientHint(reasons)}` };
}

function recipientHint(reasons: string[]): string {
  if (reasons.includes('UNREGISTERED_FAILURE')) return ' (the recipient is not on Signal)';
  if (reasons.includes('IDENTITY_FAILURE'))
    return ' (the recipient’s safety number changed: trust it first)';
  return '';
}

function rateLimited(
  reply: HttpReply,
  json: SignalAnswer,
  explain: (what: string) => string,
): SendResult {
  if (Array.isArray(json.challenge_tokens)) {
    // Only a person solving the captcha lifts this: retrying just adds to the limit.
    const what =
      'Signal rate-limited the account; a captcha must be solved via /v1/accounts/{number}/rate-limit-challenge before it can send again';
    return { status: 'failed', reason: `Signal HTTP 429: ${what}` };
  }
  // A 429 without challenge tokens comes from a proxy in front of the API.
  const wait = retryAfterMs(reply.headers['retry-after']);
  const reason = explain('rate limited');
  return wait === undefined
    ? { status: 'retry', reason }
    : { status: 'retry', reason, retryAfterMs: wait };
}
