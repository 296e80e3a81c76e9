/**
 * The Gmail API calls the mail flow makes (watch, stop, history.list,
 * messages.get) for one mailbox, over its token source and the bounded
 * outbound client. Every call answers a typed outcome: a Gmail 401 refreshes
 * the token once and resends once; refusals are classified by status and
 * Google's error reasons; answers are validated before they are returned.
 */
import { parseAnswerJson } from '../outbound/answer-json.ts';
import { outboundCall } from '../outbound/http-client.ts';
import {
  type HistoryPage,
  MAX_LISTED_MESSAGES,
  readHistoryPage,
  readMessageList,
  readProfile,
  readWatch,
  type WatchResult,
} from './answers.ts';
import { normaliseHistoryId } from './history-id.ts';
import { InvalidAnswer, isGmailId } from './json-fields.ts';
import { type GmailMessage, readMessage } from './message.ts';
import type { TokenSource } from './oauth.ts';
import {
  classifyRefusal,
  type GmailFailure,
  type GmailOutcome,
  noAnswer,
  tokenFailure,
} from './outcome.ts';

/** Gmail's address when `apiBaseUrl` is not set. */
export const GMAIL_API_BASE_URL = 'https://gmail.googleapis.com';
/** Most bytes of one answer read by default (a full message with inline text parts). */
export const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** History records asked for per page (Gmail's maximum). */
export const HISTORY_PAGE_SIZE = 500;

/** How to reach and authenticate as one mailbox. */
export type GmailApiOptions = {
  tokens: TokenSource;
  /** The mailbox address, or `me` (the default): the authenticated user. */
  userId?: string;
  apiBaseUrl?: string;
  timeoutMs: number;
  maxAnswerBytes?: number;
  now?: () => number;
};

/** The users.watch body (labelFilterAction is deprecated and never sent). */
export type WatchRequest = {
  /** projects/{project}/topics/{topic}. */
  topicName: string;
  labelIds?: readonly string[];
  labelFilterBehavior?: 'include' | 'exclude';
};

/** One history page: after `startHistoryId`, with the label, from `pageToken`. */
export type HistoryRequest = { startHistoryId: string; labelId?: string; pageToken?: string };

/** The format of a message (`metadataHeaders` narrows `metadata`). */
export type MessageRequest = { format: 'full' | 'metadata'; metadataHeaders?: readonly string[] };

/** The Gmail calls of one mailbox; each answers a typed outcome. */
export type GmailApi = {
  /** Create or renew the mailbox's watch. */
  watch(request: WatchRequest, signal?: AbortSignal): Promise<GmailOutcome<WatchResult>>;
  /** End the mailbox's watch. */
  stop(signal?: AbortSignal): Promise<GmailOutcome<null>>;
  /** One page of added messages after `startHistoryId` (404: cursor_expired). */
  listHistory(request: HistoryRequest, signal?: AbortSignal): Promise<GmailOutcome<HistoryPage>>;
  /** The newest message ids with a label (messages.list; after an expired cursor). */
  listMessages(
    request: { labelId?: string; maxResults: number },
    signal?: AbortSignal,
  ): Promise<GmailOutcome<{ messageIds: string[] }>>;
  /** The mailbox's current history id (users.getProfile). */
  profile(signal?: AbortSignal): Promise<GmailOutcome<{ historyId: string }>>;
  /** One message (404: not_found, deleted since). */
  getMessage(
    id: string,
    request: MessageRequest,
    signal?: AbortSignal,
  ): Promise<GmailOutcome<GmailMessage>>;
};

type Call<T> = {
  method: 'GET' | 'POST';
  /** Below /gmail/v1/users/{userId}/. */
  path: string;
  query?: URLSearchParams;
  body?: unknown;
  /** What a 404 means for this call. */
  notFound: GmailFailure;
  /** The validated value of a 2xx answer (undefined json: an empty body); throws InvalidAnswer. */
  read: (json: unknown) => T;
};

/** Create the Gmail API client of one mailbox. */
export function createGmailApi(options: GmailApiOptions): GmailApi {
  const base = (options.apiBaseUrl ?? GMAIL_API_BASE_URL).replace(/\/+$/, '');
  const userRoot = `${base}/gmail/v1/users/${encodeURIComponent(options.userId ?? 'me')}/`;
  // A request refused before sending (a bad id) is a failure without a call.
  const send = <T>(call: Call<T> | GmailFailure, signal?: AbortSignal) =>
    'kind' in call ? Promise.resolve(call) : sendCall(options, userRoot, call, signal);
  return {
    watch: (request, signal) => send(watchCall(request), signal),
    stop: (signal) =>
      send({ method: 'POST', path: 'stop', notFound: failed404, read: () => null }, signal),
    listHistory: (request, signal) => send(historyCall(request), signal),
    getMessage: (id, request, signal) => send(messageCall(id, request), signal),
    listMessages: (request, signal) => send(listCall(request), signal),
    profile: (signal) =>
      send({ method: 'GET', path: 'profile', notFound: failed404, read: readProfile }, signal),
  };
}

const failed404: GmailFailure = { kind: 'failed', reason: 'Gmail HTTP 404' };

function watchCall(request: WatchRequest): Call<WatchResult> {
  const body = {
    topicName: request.topicName,
    ...(request.labelIds && { labelIds: [...request.labelIds] }),
    ...(request.labelFilterBehavior && { labelFilterBehavior: request.labelFilterBehavior }),
  };
  return { method: 'POST', path: 'watch', body, notFound: failed404, read: readWatch };
}

function historyCall(request: HistoryRequest): Call<HistoryPage> | GmailFailure {
  const start = normaliseHistoryId(request.startHistoryId);
  if (start === undefined) return { kind: 'failed', reason: 'startHistoryId is not a history id' };
  const query = new URLSearchParams({
    startHistoryId: start,
    historyTypes: 'messageAdded',
    maxResults: String(HISTORY_PAGE_SIZE),
  });
  if (request.labelId) query.set('labelId', request.labelId);
  if (request.pageToken) query.set('pageToken', request.pageToken);
  // A 404 here is a start history id Gmail no longer keeps (the sync guide's full-sync case).
  const notFound = { kind: 'cursor_expired' } as const;
  return { method: 'GET', path: 'history', query, notFound, read: readHistoryPage };
}

function listCall(request: {
  labelId?: string;
  maxResults: number;
}): Call<{ messageIds: string[] }> {
  const max = Math.max(1, Math.min(request.maxResults, MAX_LISTED_MESSAGES));
  const query = new URLSearchParams({ maxResults: String(max) });
  if (request.labelId) query.set('labelIds', request.labelId);
  return { method: 'GET', path: 'messages', query, notFound: failed404, read: readMessageList };
}

function messageCall(id: string, request: MessageRequest): Call<GmailMessage> | GmailFailure {
  if (!isGmailId(id)) return { kind: 'failed', reason: 'not a message id' };
  const query = new URLSearchParams({ format: request.format });
  for (const name of request.metadataHeaders ?? []) query.append('metadataHeaders', name);
  const read = (json: unknown) => {
    const message = readMessage(json);
    // An answer about another message would be acted on as this one.
    if (message.id !== id) throw new InvalidAnswer('/id', 'not the message asked for');
    return message;
  };
  const path = `messages/${encodeURIComponent(id)}`;
  return { method: 'GET', path, query, notFound: { kind: 'not_found' }, read };
}

/** One call: a token, the request, and on 401 one refresh and one resend. */
async function sendCall<T>(
  options: GmailApiOptions,
  userRoot: string,
  call: Call<T>,
  signal: AbortSignal | undefined,
): Promise<GmailOutcome<T>> {
  const url = `${userRoot}${call.path}${call.query ? `?${call.query}` : ''}`;
  for (let attempt = 0; ; attempt++) {
    const token = await options.tokens.accessToken(signal);
    if (token.kind !== 'ok') return tokenFailure(token);
    const outcome = await outboundCall(url, {
      method: call.method,
      headers: {
        authorization: `Bearer ${token.accessToken}`,
        accept: 'application/json',
        ...(call.body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(call.body !== undefined && { body: JSON.stringify(call.body) }),
      timeoutMs: options.timeoutMs,
      ...(signal && { signal }),
      maxBytes: options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    });
    if (outcome.kind !== 'answer') return noAnswer(outcome);
    if (outcome.status === 401) {
      // An expired or revoked token: refresh once and resend once, then give up.
      if (attempt > 0) return { kind: 'auth' };
      options.tokens.invalidate(token.accessToken);
      continue;
    }
    if (outcome.status === 404) return call.notFound;
    const json = outcome.text.trim() === '' ? undefined : parseAnswerJson(outcome.text);
    if (outcome.status < 200 || outcome.status >= 300) {
      return classifyRefusal(outcome.status, json, outcome.headers['retry-after'], options.now?.());
    }
    return readAnswer(call, json, outcome.text);
  }
}

function readAnswer<T>(call: Call<T>, json: unknown, text: string): GmailOutcome<T> {
  // Undefined from a non-empty body: not JSON, or nested deeper than any honest answer.
  if (json === undefined && text.trim() !== '') {
    return { kind: 'failed', reason: 'Gmail answer is not JSON (or nests too deeply)' };
  }
  try {
    return { kind: 'ok', value: call.read(json) };
  } catch (err) {
    if (err instanceof InvalidAnswer) {
      return {
        kind: 'failed',
        reason: `Gmail answer invalid at ${err.message}`,
        invalidAnswer: true,
      };
    }
    throw err;
  }
}
