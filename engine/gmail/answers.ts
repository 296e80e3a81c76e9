/**
 * The small Gmail answers, validated: `users.watch` (the mailbox's history
 * id and when the watch expires) and one page of `users.history.list` (the
 * ids of added messages, in order and without repeats, the mailbox's
 * history id and the next page's token).
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

/** The most history records one page may carry (Gmail's maxResults is 500 at most). */
export const MAX_HISTORY_RECORDS = 500;
/** The most messages one history record may name (Gmail's name one, a thread's move a few). */
export const MAX_MESSAGES_PER_RECORD = 100;
const MAX_PAGE_TOKEN = 4096;
// A page token goes back into a query string: printable ASCII only.
const PAGE_TOKEN_SHAPE = /^[\x21-\x7e]+$/;

/** What users.watch answers. */
export type WatchResult = {
  /** The mailbox's history id when the watch was (re)made, decimal string. */
  historyId: string;
  /** When Gmail stops sending notifications, epoch milliseconds. */
  expirationMs: number;
};

/** One page of users.history.list, reduced to what the mail flow needs. */
export type HistoryPage = {
  /** Ids of added messages, first seen first, each once. */
  messageIds: string[];
  /** The mailbox's current history id, decimal string. */
  historyId: string;
  nextPageToken?: string;
};

/** The validated watch answer, or InvalidAnswer. */
export function readWatch(json: unknown): WatchResult {
  if (!isRecord(json)) throw new InvalidAnswer('/', 'not an object');
  return {
    historyId: readHistoryId(field(json, 'historyId'), '/historyId'),
    expirationMs: readEpochMs(field(json, 'expiration'), '/expiration'),
  };
}

/** Most message ids read from one messages.list answer. */
export const MAX_LISTED_MESSAGES = 500;

/** The validated messages.list answer: ids, newest first. */
export function readMessageList(json: unknown): { messageIds: string[] } {
  if (!isRecord(json)) throw new InvalidAnswer('/', 'not an object');
  const listed = readArray(field(json, 'messages'), '/messages', MAX_LISTED_MESSAGES);
  return {
    messageIds: listed.map((entry, i) => readId(field(entry, 'id'), `/messages/${i}/id`)),
  };
}

/** The validated users.getProfile answer: the mailbox's current history id. */
export function readProfile(json: unknown): { historyId: string } {
  if (!isRecord(json)) throw new InvalidAnswer('/', 'not an object');
  return { historyId: readHistoryId(field(json, 'historyId'), '/historyId') };
}

/** The validated history page, or InvalidAnswer. */
export function readHistoryPage(json: unknown): HistoryPage {
  if (!isRecord(json)) throw new InvalidAnswer('/', 'not an object');
  const records = readArray(field(json, 'history'), '/history', MAX_HISTORY_RECORDS);
  const seen = new Set<string>();
  records.forEach((record, i) => {
    for (const id of addedIds(record, `/history/${i}`)) seen.add(id);
  });
  const token = field(json, 'nextPageToken');
  // An empty token means no next page, as an absent one does.
  const next = token === undefined || token === '' ? undefined : readPageToken(token);
  return {
    messageIds: [...seen],
    historyId: readHistoryId(field(json, 'historyId'), '/historyId'),
    ...(next !== undefined && { nextPageToken: next }),
  };
}

function addedIds(record: unknown, path: string): string[] {
  if (!isRecord(record)) throw new InvalidAnswer(path, 'not an object');
  const added = readArray(
    field(record, 'messagesAdded'),
    `${path}/messagesAdded`,
    MAX_MESSAGES_PER_RECORD,
  );
  return added.map((entry, j) =>
    readId(field(field(entry, 'message'), 'id'), `${path}/messagesAdded/${j}/message/id`),
  );
}

function readHistoryId(value: unknown, path: string): string {
  const id = normaliseHistoryId(value);
  if (id === undefined)
    throw new InvalidAnswer(path, 'not an unsigned 64-bit id (or a rounded number)');
  return id;
}

function readPageToken(value: unknown): string {
  const token = readString(value, '/nextPageToken', MAX_PAGE_TOKEN);
  if (!PAGE_TOKEN_SHAPE.test(token)) throw new InvalidAnswer('/nextPageToken', 'not printable');
  return token;
}
