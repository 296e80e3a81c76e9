/**
 * The Message resource of `users.messages.get`, validated into fresh data:
 * only the documented fields are copied, each checked for type and bounds,
 * and the MIME part tree is bounded in depth and size. Extracting text from
 * it is another module's job; this one only says the shape can be trusted.
 */
import { normaliseHistoryId } from './history-id.ts';
import {
  field,
  InvalidAnswer,
  isRecord,
  readArray,
  readEpochMs,
  readId,
  readString,
} from './json-fields.ts';

/** Deepest nesting of MIME parts accepted (honest mail nests a handful). */
export const MAX_PART_DEPTH = 16;
/** Most MIME parts in one message. */
export const MAX_PARTS = 500;
/** Most headers in one part. */
export const MAX_HEADERS = 1000;
/** Most labels on one message. */
export const MAX_LABELS = 1000;

const MAX_HEADER_NAME = 256;
const MAX_HEADER_VALUE = 64 * 1024;
const MAX_SHORT_TEXT = 1024;
const MAX_SNIPPET = 4096;
// Base64url as Gmail sends part data (padding tolerated).
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** One header of a MIME part, as Gmail sends it. */
export type MessageHeader = { name: string; value: string };

/** A part's body: inline data or an attachment id. */
export type MessagePartBody = {
  /** Bytes of the part's data (before transfer encoding). */
  size: number;
  /** The part's data, base64url; absent for containers and attachments. */
  data?: string;
  /** Set when the content must be fetched with messages.attachments.get. */
  attachmentId?: string;
};

/** One MIME part and its children. */
export type MessagePart = {
  partId: string;
  mimeType: string;
  /** Non-empty only for attachments. */
  filename: string;
  headers: MessageHeader[];
  body: MessagePartBody;
  parts: MessagePart[];
};

/** The validated Message resource. */
export type GmailMessage = {
  id: string;
  threadId: string;
  labelIds: string[];
  snippet: string;
  /** Last history record that changed the message (decimal string). */
  historyId?: string;
  /** When Google accepted the message, epoch milliseconds. */
  internalDate: number;
  sizeEstimate?: number;
  payload: MessagePart;
};

/** The validated message, or InvalidAnswer naming the first bad field. */
export function readMessage(json: unknown): GmailMessage {
  if (!isRecord(json)) throw new InvalidAnswer('/', 'not an object');
  const historyId = field(json, 'historyId');
  const normalised = historyId === undefined ? undefined : normaliseHistoryId(historyId);
  if (historyId !== undefined && normalised === undefined) {
    throw new InvalidAnswer('/historyId', 'not an unsigned 64-bit id');
  }
  const sizeEstimate = field(json, 'sizeEstimate');
  const budget = { parts: 0 };
  return {
    id: readId(field(json, 'id'), '/id'),
    threadId: readId(field(json, 'threadId'), '/threadId'),
    labelIds: readArray(field(json, 'labelIds'), '/labelIds', MAX_LABELS).map((label, i) =>
      readId(label, `/labelIds/${i}`),
    ),
    snippet: readString(field(json, 'snippet'), '/snippet', MAX_SNIPPET, ''),
    ...(normalised !== undefined && { historyId: normalised }),
    internalDate: readEpochMs(field(json, 'internalDate'), '/internalDate'),
    ...(sizeEstimate !== undefined && {
      sizeEstimate: readCount(sizeEstimate, '/sizeEstimate'),
    }),
    payload: readPart(field(json, 'payload'), '/payload', 0, budget),
  };
}

function readPart(
  value: unknown,
  path: string,
  depth: number,
  budget: { parts: number },
): MessagePart {
  if (!isRecord(value)) throw new InvalidAnswer(path, 'not an object');
  if (depth > MAX_PART_DEPTH) throw new InvalidAnswer(path, `nested deeper than ${MAX_PART_DEPTH}`);
  if (++budget.parts > MAX_PARTS) throw new InvalidAnswer(path, `more than ${MAX_PARTS} parts`);
  const children = readArray(field(value, 'parts'), `${path}/parts`, MAX_PARTS);
  return {
    partId: readString(field(value, 'partId'), `${path}/partId`, MAX_SHORT_TEXT, ''),
    mimeType: readString(field(value, 'mimeType'), `${path}/mimeType`, MAX_SHORT_TEXT, ''),
    filename: readString(field(value, 'filename'), `${path}/filename`, MAX_SHORT_TEXT, ''),
    headers: readArray(field(value, 'headers'), `${path}/headers`, MAX_HEADERS).map((h, i) =>
      readHeader(h, `${path}/headers/${i}`),
    ),
    body: readBody(field(value, 'body'), `${path}/body`),
    parts: children.map((child, i) => readPart(child, `${path}/parts/${i}`, depth + 1, budget)),
  };
}

function readHeader(value: unknown, path: string): MessageHeader {
  if (!isRecord(value)) throw new InvalidAnswer(path, 'not an object');
  return {
    name: readString(field(value, 'name'), `${path}/name`, MAX_HEADER_NAME),
    value: readString(field(value, 'value'), `${path}/value`, MAX_HEADER_VALUE, ''),
  };
}

function readBody(value: unknown, path: string): MessagePartBody {
  if (value === undefined) return { size: 0 };
  if (!isRecord(value)) throw new InvalidAnswer(path, 'not an object');
  const size = field(value, 'size');
  const data = field(value, 'data');
  const attachmentId = field(value, 'attachmentId');
  if (data !== undefined && (typeof data !== 'string' || !BASE64URL.test(data))) {
    throw new InvalidAnswer(`${path}/data`, 'not base64url');
  }
  return {
    size: size === undefined ? 0 : readCount(size, `${path}/size`),
    ...(data !== undefined && { data }),
    ...(attachmentId !== undefined && {
      attachmentId: readString(attachmentId, `${path}/attachmentId`, 4096),
    }),
  };
}

function readCount(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidAnswer(path, 'not a non-negative integer');
  }
  return value;
}
