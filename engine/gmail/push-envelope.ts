/**
 * The parse stage of a Gmail push: a Pub/Sub wrapped delivery (the parsed
 * JSON body) to the notification it carries, `{emailAddress, historyId}`
 * base64-encoded in `message.data`, with the Pub/Sub message id to dedupe
 * on. Every field is checked for type and bound; the function is total (it
 * never throws, reads only own data properties, runs no getter) and its
 * refusals are data. The caller acknowledges a refused push and logs the
 * reason: Pub/Sub would redeliver it forever and slow the whole subscription.
 */
import { types } from 'node:util';
import { decodeBase64Either } from './base64-either.ts';
import { parseForeignJson } from '../foreign-json.ts';

/** Most characters of `message.data` (a Gmail notification is under 200). */
export const MAX_DATA_CHARS = 4096;

/** Most characters of a Pub/Sub message id (Google's are decimal, about 17). */
export const MAX_MESSAGE_ID_CHARS = 128;

/** Longest mail address (RFC 5321's path limit). */
export const MAX_EMAIL_CHARS = 254;

/** A notification ready to dedupe and enqueue. */
export type GmailPush = {
  /** Pub/Sub's id for the message: the dedupe key. */
  messageId: string;
  /** RFC 3339, as Pub/Sub wrote it. */
  publishTime?: string;
  /** `projects/<project>/subscriptions/<name>`. */
  subscription?: string;
  /** The mailbox that changed, as Gmail wrote it. */
  emailAddress: string;
  /** Gmail's history id in canonical decimal (no leading zeros); compare as BigInt. */
  historyId: string;
};

/** Which part of a push was unacceptable. */
export type PushEnvelopeFailure =
  | 'not_object'
  | 'message'
  | 'message_id'
  | 'publish_time'
  | 'subscription'
  | 'data'
  | 'encoding'
  | 'payload'
  | 'email_address'
  | 'history_id';

/** The outcome of decoding one push. */
export type PushEnvelopeResult =
  | { ok: true; push: GmailPush }
  | { ok: false; reason: PushEnvelopeFailure };

type Fields = { readonly [key: string]: unknown };

// Visible ASCII: no controls or spaces reach logs or dedupe keys.
const MESSAGE_ID = /^[\x21-\x7e]+$/;
const PUBLISH_TIME =
  /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;
const SUBSCRIPTION = /^projects\/[A-Za-z0-9.:_-]{1,100}\/subscriptions\/[A-Za-z0-9._~+%-]{1,255}$/;
// One @ between two runs of visible ASCII: Gmail mailboxes are ASCII addresses.
const EMAIL = /^[\x21-\x3f\x41-\x7e]+@[\x21-\x3f\x41-\x7e]+$/;
const DECIMAL = /^[0-9]{1,20}$/;
// History ids are unsigned 64-bit.
const MAX_HISTORY_ID = 2n ** 64n - 1n;
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The notification in a parsed push body, or which part of it was unacceptable. */
export function decodePush(body: unknown): PushEnvelopeResult {
  const envelope = plainObject(body);
  if (!envelope) return refuse('not_object');
  const message = plainObject(own(envelope, 'message'));
  if (!message) return refuse('message');
  const messageId = bounded(camelOrSnake(message, 'messageId', 'message_id'), MAX_MESSAGE_ID_CHARS);
  if (messageId === undefined || !MESSAGE_ID.test(messageId)) return refuse('message_id');
  const publishTime = camelOrSnake(message, 'publishTime', 'publish_time');
  if (publishTime !== undefined && !matches(publishTime, PUBLISH_TIME, 64)) {
    return refuse('publish_time');
  }
  const subscription = own(envelope, 'subscription');
  if (subscription !== undefined && !matches(subscription, SUBSCRIPTION, 512)) {
    return refuse('subscription');
  }
  const notification = decodeData(own(message, 'data'));
  if (!notification.ok) return notification;
  const push: GmailPush = { messageId, ...notification.fields };
  if (typeof publishTime === 'string') push.publishTime = publishTime;
  if (typeof subscription === 'string') push.subscription = subscription;
  return { ok: true, push };
}

type Notification = Pick<GmailPush, 'emailAddress' | 'historyId'>;

// message.data: bounded base64 text of a UTF-8 JSON object {emailAddress, historyId}.
function decodeData(
  data: unknown,
): { ok: true; fields: Notification } | { ok: false; reason: PushEnvelopeFailure } {
  const text = bounded(data, MAX_DATA_CHARS);
  if (text === undefined) return refuse('data');
  const bytes = decodeBase64Either(text);
  if (!bytes) return refuse('encoding');
  const fields = plainObject(parseJson(bytes));
  if (!fields) return refuse('payload');
  const emailAddress = own(fields, 'emailAddress');
  if (!matches(emailAddress, EMAIL, MAX_EMAIL_CHARS)) return refuse('email_address');
  const historyId = canonicalHistoryId(own(fields, 'historyId'));
  if (historyId === undefined) return refuse('history_id');
  return { ok: true, fields: { emailAddress, historyId } };
}

/**
 * A history id as canonical decimal. Strings of up to 20 digits are exact.
 * Numbers are accepted only as safe integers: JSON.parse has already rounded
 * a larger number to the nearest double, so its digits may not be the ones
 * Gmail sent, and a rounded cursor would skip or replay mailbox history.
 */
export function canonicalHistoryId(value: unknown): string | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value >= 0 ? String(value) : undefined;
  }
  if (typeof value !== 'string' || !DECIMAL.test(value)) return undefined;
  const id = BigInt(value);
  return id <= MAX_HISTORY_ID ? id.toString() : undefined;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return parseForeignJson(fatalUtf8.decode(bytes));
  } catch {
    return undefined;
  }
}

// A JSON-like object: no array, no proxy (its traps could throw), no class instance.
function plainObject(value: unknown): Fields | undefined {
  // The proxy test comes first: even Array.isArray throws on a revoked proxy.
  if (typeof value !== 'object' || value === null || types.isProxy(value)) return undefined;
  if (Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null ? (value as Fields) : undefined;
}

// Own data properties only: blocks __proto__ and inherited keys, never runs a getter.
function own(fields: Fields, key: string): unknown {
  const descriptor = Object.getOwnPropertyDescriptor(fields, key);
  return descriptor && 'value' in descriptor ? descriptor.value : undefined;
}

// Pub/Sub sends camelCase and may add snake_case copies; camelCase wins when present.
function camelOrSnake(fields: Fields, camel: string, snake: string): unknown {
  return Object.hasOwn(fields, camel) ? own(fields, camel) : own(fields, snake);
}

function bounded(value: unknown, maxChars: number): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= maxChars
    ? value
    : undefined;
}

function matches(value: unknown, pattern: RegExp, maxChars: number): value is string {
  // Length first: no pattern runs on unbounded text.
  return bounded(value, maxChars) !== undefined && pattern.test(value as string);
}

function refuse(reason: PushEnvelopeFailure): { ok: false; reason: PushEnvelopeFailure } {
  return { ok: false, reason };
}
