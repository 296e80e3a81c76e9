/**
 * The `whatsapp` channel: a text message to a phone number through the
 * WhatsApp Business Cloud API (Meta Graph API), classifying Meta's
 * `error.code` (not the HTTP status) into retry or permanent failure.
 */
import type { WhatsAppSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { type HttpReply, postJson, retry } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Meta's limit on `text.body`. */
export const WHATSAPP_MAX_LENGTH = 4096;

/**
 * Wait after a throttling code (4, 80007, 130429) when no Retry-After header
 * came: Meta documents no wait hint for these, so this is our choice.
 */
export const WHATSAPP_THROTTLE_BACKOFF_MS = 30_000;

/** Wait after 131056 (too many messages to the same recipient): Meta's "1 per 6 s" pair pace. */
export const WHATSAPP_PAIR_BACKOFF_MS = 6_000;

const E164 = /^\+[1-9][0-9]{6,14}$/;

const THROTTLED = new Set([4, 80007, 130429]);
const TRANSIENT = new Set([1, 2, 131000]);
const STOP_AND_ALERT = new Set([131048, 368]);
const PERMANENT: ReadonlyMap<number, string> = new Map([
  [0, 'access token rejected'],
  [190, 'access token expired'],
  [3, 'capability missing'],
  [10, 'permission missing'],
  [100, 'invalid parameter'],
  [131008, 'required parameter missing'],
  [131009, 'parameter value not valid'],
  [131026, 'message undeliverable to this recipient'],
  [131030, 'recipient not in the allowed list'],
  [131047, 'more than 24 hours since the user last wrote (a template is needed)'],
]);

/** The phone number without spaces, hyphens, dots and parentheses. */
export function normaliseWhatsAppRecipient(to: string): string {
  return to.trim().replace(/[\s\-.()]/g, '');
}

/** Why `to` is not an E.164 phone number, or null when it is. */
export function checkWhatsAppRecipient(to: string): string | null {
  const number = normaliseWhatsAppRecipient(to);
  if (E164.test(number)) return null;
  if (number.startsWith('00')) return 'use "+" and the country code instead of the 00 prefix';
  if (!number.startsWith('+')) return 'expected an international phone number starting with "+"';
  return 'expected an E.164 phone number: "+", then 7 to 15 digits, not starting with 0';
}

/** Create the WhatsApp adapter from its validated settings. */
export function createWhatsAppAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as WhatsAppSettings;
  const base = s.baseUrl.replace(/\/+$/, '');
  const url = `${base}/${s.apiVersion}/${encodeURIComponent(s.phoneNumberId)}/messages`;
  const secrets = [s.accessToken, ...urlSecrets(s.baseUrl)];
  return {
    id: 'whatsapp',
    maxLength: WHATSAPP_MAX_LENGTH,
    checkRecipient: checkWhatsAppRecipient,
    normaliseRecipient: normaliseWhatsAppRecipient,
    async send(to, text, signal) {
      const body = {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        to: normaliseWhatsAppRecipient(to),
        type: 'text',
        text: { body: text, preview_url: false },
      };
      const outcome = await postJson(url, body, {
        headers: { authorization: `Bearer ${s.accessToken}` },
        timeoutMs: s.timeoutMs,
        signal,
      });
      return outcome.result ?? classifyWhatsAppReply(outcome.reply, secrets);
    },
  };
}

type MetaError = { code?: unknown; message?: unknown; error_data?: { details?: unknown } };

/** Map a Cloud API answer to a send result. */
export function classifyWhatsAppReply(reply: HttpReply, secrets: readonly string[]): SendResult {
  const json = reply.json as { messages?: { id?: unknown }[]; error?: MetaError } | undefined;
  if (reply.status >= 200 && reply.status < 300 && !json?.error) {
    const id = json?.messages?.[0]?.id;
    return typeof id === 'string' ? { status: 'sent', messageId: id } : { status: 'sent' };
  }
  const error = json?.error;
  const code = typeof error?.code === 'number' ? error.code : undefined;
  const said = answerDetail(error?.error_data?.details ?? error?.message, secrets);
  const reason = `WhatsApp HTTP ${reply.status}${code === undefined ? '' : ` code ${code}`}`;
  const explain = (what: string) => `${reason}: ${what}${said ? ` (${said})` : ''}`;
  const hinted = retryAfterMs(reply.headers['retry-after']);
  if (code !== undefined && THROTTLED.has(code)) {
    const wait = hinted ?? WHATSAPP_THROTTLE_BACKOFF_MS;
    return { status: 'retry', reason: explain('rate limit reached'), retryAfterMs: wait };
  }
  if (code === 131056) {
    const wait = hinted ?? WHATSAPP_PAIR_BACKOFF_MS;
    return {
      status: 'retry',
      reason: explain('too many messages to this recipient'),
      retryAfterMs: wait,
    };
  }
  if (code !== undefined && TRANSIENT.has(code)) return retry(explain('temporary error'), hinted);
  if (code !== undefined && STOP_AND_ALERT.has(code)) {
    return { status: 'failed', reason: explain('sending is restricted; the operator must act') };
  }
  const permanent = code === undefined ? undefined : permanentMeaning(code);
  if (permanent) return { status: 'failed', reason: explain(permanent) };
  if (reply.status === 429 || reply.status >= 500) return retry(explain('temporary error'), hinted);
  return { status: 'failed', reason: explain('request refused') };
}

function permanentMeaning(code: number): string | undefined {
  if (code >= 200 && code <= 299) return 'permission missing';
  return PERMANENT.get(code);
}
