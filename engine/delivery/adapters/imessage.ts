/**
 * The `imessage` channel: a text through a BlueBubbles server
 * (`POST {url}/api/v1/message/text?password=...`) to a chat GUID, or to a
 * phone number or email turned into a one-to-one chat GUID. Sends with the
 * `apple-script` method, which needs no Private API helper on the Mac. The
 * password rides in the query string, so the URL never enters a reason.
 */
import { randomUUID } from 'node:crypto';
import type { IMessageSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerCode, answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { type HttpReply, postJson } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';

/** Not documented by BlueBubbles; our choice. */
export const IMESSAGE_MAX_LENGTH = 4000;

const CHAT_GUID = /^(iMessage|SMS);([-+]);(\S+)$/;
const E164 = /^\+[1-9][0-9]{6,14}$/;
// One `@` between two parts without spaces, `@` or `;`; the domain's dot is looked for apart:
// a pattern with the dot in it retried every dot of a long run of them.
const EMAIL_PARTS = /^[^\s@;]+@([^\s@;]+)$/;

// BlueBubbles' apple-script send writes the chat GUID unescaped between double quotes in the
// AppleScript it runs on the Mac: a quote, backslash or control in it would run as script.
const BREAKS_SCRIPT = /["\\\p{Cc}]/u;

// BlueBubbles' error types: a few words (`Server Error`, `iMessage Error`).
const ERROR_TYPE = /^[A-Za-z][A-Za-z ]{0,63}$/;

const DUPLICATE = 'the message may or may not have gone out; not resent, to avoid a duplicate';

/** A chat GUID as given; a bare phone number or email as `iMessage;-;<address>`. */
export function normaliseIMessageRecipient(to: string): string {
  const trimmed = to.trim();
  if (CHAT_GUID.test(trimmed)) return trimmed;
  return `iMessage;-;${normaliseAddress(trimmed)}`;
}

/** Why `to` is not a chat GUID, E.164 number or email address, or null when it is. */
export function checkIMessageRecipient(to: string): string | null {
  const trimmed = to.trim();
  if (BREAKS_SCRIPT.test(trimmed))
    return 'a recipient holds no quote, backslash or control character';
  const guid = CHAT_GUID.exec(trimmed);
  if (guid) {
    if (guid[2] === '+' || isAddress(guid[3] as string)) return null;
    return 'a one-to-one chat GUID needs an E.164 phone number or an email address after ";-;"';
  }
  if (isAddress(normaliseAddress(trimmed))) return null;
  return 'expected a chat GUID ("iMessage;-;+15551234567"), an E.164 phone number or an email address';
}

function normaliseAddress(address: string): string {
  return address.startsWith('+') ? address.replace(/[\s\-.()]/g, '') : address;
}

function isAddress(address: string): boolean {
  return E164.test(address) || isEmail(address);
}

function isEmail(address: string): boolean {
  return EMAIL_PARTS.exec(address)?.[1]?.slice(1, -1).includes('.') === true;
}

/** Create the iMessage (BlueBubbles) adapter from its validated settings. */
export function createIMessageAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as IMessageSettings;
  const base = s.url.replace(/\/+$/, '');
  const url = `${base}/api/v1/message/text?password=${encodeURIComponent(s.password)}`;
  const secrets = [s.password, ...urlSecrets(s.url)];
  return {
    id: 'imessage',
    maxLength: IMESSAGE_MAX_LENGTH,
    checkRecipient: checkIMessageRecipient,
    normaliseRecipient: normaliseIMessageRecipient,
    async send(to, text, signal) {
      const body = {
        chatGuid: normaliseIMessageRecipient(to),
        tempGuid: randomUUID(),
        message: text,
        method: 'apple-script',
      };
      const outcome = await postJson(url, body, { headers: {}, timeoutMs: s.timeoutMs, signal });
      return outcome.result ?? classifyIMessageReply(outcome.reply, secrets);
    },
  };
}

type BlueBubblesAnswer = {
  message?: unknown;
  error?: { type?: unknown; message?: unknown; error?: unknown };
  data?: { guid?: unknown };
};

/** Map a BlueBubbles answer to a send result. */
export function classifyIMessageReply(reply: HttpReply, secrets: readonly string[]): SendResult {
  const json = (reply.json ?? {}) as BlueBubblesAnswer;
  if (reply.status >= 200 && reply.status < 300) {
    const id = json.data?.guid;
    return typeof id === 'string' ? { status: 'sent', messageId: id } : { status: 'sent' };
  }
  // Only a type of the type's shape is echoed: any other text could carry the password.
  const type = answerCode(json.error?.type, ERROR_TYPE);
  // An iMessage Error can carry the Mac's AppleScript output, which may quote the text.
  const said =
    type === 'iMessage Error'
      ? ''
      : answerDetail(json.error?.message ?? json.error?.error ?? json.message, secrets);
  const base = `BlueBubbles HTTP ${reply.status}${type ? ` (${type})` : ''}`;
  const explain = (what: string) => `${base}: ${what}${said ? ` (${said})` : ''}`;
  if (reply.status === 429) {
    // BlueBubbles documents no rate limit; a tunnel or proxy in front of the Mac can.
    const wait = retryAfterMs(reply.headers['retry-after']);
    const reason = explain('rate limited');
    return wait === undefined
      ? { status: 'retry', reason }
      : { status: 'retry', reason, retryAfterMs: wait };
  }
  if (reply.status === 504) {
    return {
      status: 'retry',
      reason: explain('gateway timeout; a retry can duplicate the message'),
    };
  }
  if (reply.status === 502 || reply.status === 503) {
    return { status: 'retry', reason: explain('server unavailable') };
  }
  // Other 5xx are retried, as for every channel, with a warning: the message may have gone out.
  if (reply.status >= 500 && type !== 'Server Error' && type !== 'iMessage Error') {
    return { status: 'retry', reason: explain(`send failed; ${DUPLICATE}`) };
  }
  return { status: 'failed', reason: explain(refusal(reply.status, type, said)) };
}

function refusal(status: number, type: string | undefined, said: string): string {
  if (status === 401) return 'server password rejected';
  if (status === 400 && /already queued/i.test(said))
    return 'a send with this id is in flight; not resent';
  if (status === 400) return 'request refused';
  if (type === 'Server Error') return 'server misconfigured';
  if (status >= 500) return `send failed; ${DUPLICATE}`;
  return 'request refused';
}
