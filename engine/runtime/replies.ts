/**
 * Decisions about replies: is it only the heartbeat acknowledgment, how a
 * run is summarised in the main session (inside the safety wrapper: the
 * name, the reply and any reason derived from it are second-order input),
 * how long to wait before a retry.
 */
import { wrapUntrusted } from '../safety.ts';
import { clipLine } from '../one-line.ts';

// Markup and whitespace around an ack are a few characters, never kilobytes: a longer reply is
// not an ack, and is not scanned (the reply is the runner's, up to runtime.maxReplyBytes).
const ACK_MARKUP_MAX = 256;
// A tag cannot hold `<`, so a run of `<` without `>` is passed once, not once per `<`.
const TAG = /<\/?[a-z][^<>]*>/gi;
const DECORATION = /[\s*_`~#>"'.!-]/;

/**
 * True when a reply is only the ack token, allowing whitespace and light markup around it. The
 * token's own punctuation at its ends (`ALL_CLEAR!`) is read as the reply's is; a token of
 * decoration alone must be the whole reply.
 */
export function isAckOnly(reply: string, ackToken: string): boolean {
  if (reply.length > ackToken.length + ACK_MARKUP_MAX) return false;
  const core = trimDecoration(ackToken);
  if (core === '') return reply.trim() === ackToken;
  return trimDecoration(reply.replace(TAG, '')) === core;
}

// Without a regex anchored at the end, which retries from every character of a long run.
function trimDecoration(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && DECORATION.test(text[start] as string)) start++;
  while (end > start && DECORATION.test(text[end - 1] as string)) end--;
  return text.slice(start, end);
}

const SUMMARY_MAX = 280;
// A runner's error reason ends with what went wrong (a command's stderr tail is its last 500
// characters): it is kept whole up to this, not cut to a reply's length from its start.
const REASON_MAX = 500;
const NOTE_MAX = 500;
const NAME_MAX = 200;

/**
 * One line for the main session: `Hook <name>: <summary>` (the reply, at most 280 characters),
 * or `(error)` / `(timeout)` with the reason (at most 500).
 */
export function summaryLine(
  name: string,
  outcome: { status: 'ok' | 'error' | 'timeout'; text: string },
): string {
  // One line: a hook name or reply with line breaks cannot forge a `System:` line of its own.
  const label = clipLine(name, NAME_MAX) || 'Hook';
  const max = outcome.status === 'ok' ? SUMMARY_MAX : REASON_MAX;
  const short = clipLine(outcome.text, max) || '(empty reply)';
  if (outcome.status === 'ok') return `Hook ${label}: ${short}`;
  return `Hook ${label} (${outcome.status}): ${short}`;
}

/** The source label inside the wrapper of a run's summary. */
export const SUMMARY_SOURCE = 'Hook run summary';

/**
 * A run's summary as the main session stores it: a trusted first line that
 * hookgate writes (the status only), then the summary line (name, reply or
 * reason, optional note) wrapped as untrusted content. The wrapper
 * neutralises markers, so a reply cannot close it.
 */
export function summaryText(
  name: string,
  outcome: { status: 'ok' | 'error' | 'timeout'; text: string },
  note?: string,
): string {
  const line = summaryLine(name, outcome);
  const content = note ? `${line} [${clipLine(note, NOTE_MAX)}]` : line;
  return `Hook summary (${outcome.status}):\n${wrapUntrusted(content, SUMMARY_SOURCE).text}`;
}

/**
 * The longest wait a server's Retry-After (or a product's retry hint) is honoured for: past
 * `maxDelayMs`, since a retry before it only spends an attempt, but not for days on a hostile
 * or mistaken answer.
 */
export const MAX_SERVER_WAIT_MS = 3_600_000;

/**
 * Exponential backoff with full jitter, capped by `maxDelayMs`, and never before the server's
 * Retry-After (up to MAX_SERVER_WAIT_MS).
 */
export function retryDelayMs(
  attempt: number,
  settings: { baseDelayMs: number; maxDelayMs: number },
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const exponential = Math.min(
    settings.maxDelayMs,
    settings.baseDelayMs * 2 ** Math.max(0, attempt - 1),
  );
  // Whole milliseconds: the due time is stored as a number (PostgreSQL's as bigint), and
  // `runs --json` showed SQLite's with the jitter's fraction.
  const jittered = Math.round(exponential / 2 + random() * (exponential / 2));
  return Math.max(
    Math.min(settings.maxDelayMs, jittered),
    Math.min(retryAfterMs ?? 0, MAX_SERVER_WAIT_MS),
  );
}
