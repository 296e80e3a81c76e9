/**
 * The mailbox as the sync job reads it, over the Gmail API client: every
 * added message after a cursor (all history pages, resuming past the page
 * bound), each message as the gmail preset takes it (text extracted and cut,
 * excluded labels dropped), and, after an expired cursor, the newest messages
 * with the mailbox's current history id. Gmail's outcomes become the sync's.
 */
import type { GmailApi } from './api.ts';
import { listAllHistory } from './history-pages.ts';
import { type MessageTextResult, messageText } from './message-text.ts';
import type { GmailFailure } from './outcome.ts';
import type { HistoryNext, MailItem, MailResult, MailSource } from './sync.ts';

export type MailSourceSettings = { label: string; includeBody: boolean; maxBytes: number };

// History pages read before their messages are emitted: memory stays bounded in a burst.
const PAGES_PER_RUN = 5;
// Without a Retry-After, a rate-limited sync waits this long before the next try.
const DEFAULT_BACKOFF_MS = 60_000;
// A failure of the mailbox met while a message is fetched: retried as a failed sync is.
const MAILBOX_FAILURE_WAIT_MS = 5 * 60_000;
const METADATA_HEADERS = ['From', 'To', 'Subject', 'Date'];

/** The mail source of one mailbox. */
export function createMailSource(api: GmailApi, settings: MailSourceSettings): MailSource {
  return {
    async changes(cursor, pageToken) {
      const run = await listAllHistory(api, {
        startHistoryId: cursor,
        labelId: settings.label,
        maxPages: PAGES_PER_RUN,
        ...(pageToken !== undefined && { pageToken }),
      });
      if (run.kind !== 'ok') return failure(run);
      const next: HistoryNext = run.value.truncated
        ? { pageToken: run.value.resumePageToken }
        : { historyId: run.value.historyId };
      return {
        kind: 'ok',
        value: { messageIds: run.value.messageIds, next, pages: run.value.pages },
      };
    },
    async message(id) {
      const format = settings.includeBody ? 'full' : 'metadata';
      let got = await api.getMessage(id, { format, metadataHeaders: METADATA_HEADERS });
      // A message too large to read whole, or whose body's shape is past what is read (more
      // parts, deeper nesting or more or longer headers than the bounds: all the sender's
      // choice), is still announced, from its headers and snippet.
      if (
        format === 'full' &&
        (got.kind === 'too_large' || (got.kind === 'failed' && got.invalidAnswer))
      ) {
        got = await api.getMessage(id, { format: 'metadata', metadataHeaders: METADATA_HEADERS });
      }
      if (got.kind === 'not_found') return { kind: 'ok', value: undefined };
      if (got.kind !== 'ok') return failure(got);
      const text = readText(got.value, settings);
      if (text === undefined) return { kind: 'failed', reason: UNREADABLE_TEXT };
      if (text.verdict !== 'accepted') return { kind: 'ok', value: undefined };
      const m = text.message;
      const item: MailItem = {
        id: m.id,
        from: m.from,
        subject: m.subject,
        snippet: m.snippet,
        // The snippet is shown already: a body that is only the snippet again is left out.
        ...(m.body !== undefined && m.bodySource !== 'snippet' && { body: m.body }),
        receivedAtMs: got.value.internalDate,
      };
      return { kind: 'ok', value: item };
    },
    async recent(max) {
      const profile = await api.profile();
      if (profile.kind !== 'ok') return failure(profile);
      const listed = await api.listMessages({ labelId: settings.label, maxResults: max });
      if (listed.kind !== 'ok') return failure(listed);
      return {
        kind: 'ok',
        value: { messageIds: listed.value.messageIds, historyId: profile.value.historyId },
      };
    },
  };
}

const UNREADABLE_TEXT = 'its text could not be read';

/**
 * The message's text; without its body when reading the body threw, and undefined when even
 * its headers did. The message is hostile input and reading it is pure: a defect that throws on
 * one message must skip it (the owner told), not fail every sync after it on the same message.
 */
function readText(
  resource: unknown,
  settings: { maxBytes: number; includeBody: boolean },
): MessageTextResult | undefined {
  const options = { maxBytes: settings.maxBytes, includeBody: settings.includeBody };
  try {
    return messageText(resource, options);
  } catch {
    if (!options.includeBody) return undefined;
  }
  try {
    return messageText(resource, { ...options, includeBody: false });
  } catch {
    return undefined;
  }
}

function failure(outcome: GmailFailure): MailResult<never> {
  switch (outcome.kind) {
    case 'cursor_expired':
      return { kind: 'cursor_expired' };
    case 'needs_consent':
      return { kind: 'needs_consent' };
    case 'backoff':
      return {
        kind: 'backoff',
        retryAfterMs: outcome.retryAfterMs ?? DEFAULT_BACKOFF_MS,
        reason: outcome.reason,
      };
    case 'failed':
      // The token endpoint refused the OAuth client (a secret being rotated, say), or the answer
      // broke on the way: not this message's fault, so it waits (as long as after any failure,
      // growing); skipped, it was lost without a trace once things worked again.
      if (outcome.mailbox)
        return { kind: 'backoff', retryAfterMs: MAILBOX_FAILURE_WAIT_MS, reason: outcome.reason };
      return { kind: 'failed', reason: outcome.reason };
    case 'forbidden':
      // A 403 other than a rate limit is the mailbox's or the project's (a daily quota, the API
      // disabled, a domain policy), never one message's: it waits too.
      return { kind: 'backoff', retryAfterMs: MAILBOX_FAILURE_WAIT_MS, reason: outcome.reason };
    case 'too_large':
    case 'not_found':
      return { kind: 'failed', reason: outcome.kind };
    default:
      // auth (refused again after a refresh), aborted: not this message's fault; wait.
      return { kind: 'backoff', retryAfterMs: DEFAULT_BACKOFF_MS, reason: outcome.kind };
  }
}
