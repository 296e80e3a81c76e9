/**
 * What a Gmail API call came to, as data: the value, or one of the cases a
 * caller acts on differently (resync, skip, back off, ask for consent...).
 * Google's error answers are classified here by status and by the error
 * JSON's `error.errors[].reason` / `error.status`, never by message text.
 */
import type { OutboundResult } from '../outbound/http-client.ts';
import { retryAfterMs } from '../outbound/retry-after.ts';
import { field } from './json-fields.ts';
import { MAX_RETRY_AFTER_MS, type TokenFailure } from './oauth.ts';

/** What a Gmail call came to. */
export type GmailOutcome<T> =
  | { kind: 'ok'; value: T }
  /** history.list answered 404: the start history id is too old; a full sync is needed. */
  | { kind: 'cursor_expired' }
  /** messages.get answered 404: the message was deleted since. */
  | { kind: 'not_found' }
  /** Gmail answered 401 again with a freshly refreshed token (revoked access, missing scope). */
  | { kind: 'auth' }
  /** Try later: rate limits, 429, 5xx, no answer. `retryAfterMs` when the answer said (capped). */
  | { kind: 'backoff'; reason: string; retryAfterMs?: number }
  /** 403 other than a rate limit (domain policy, daily quota, Gmail API disabled). */
  | { kind: 'forbidden'; reason: string }
  /** The refresh token was refused: a person must consent again. */
  | { kind: 'needs_consent' }
  /** The answer passed the byte cap (a caller may fall back to `metadata`). */
  | { kind: 'too_large'; maxBytes: number }
  /** The caller's signal ended the call. */
  | { kind: 'aborted' }
  /**
   * Anything else: a bad request, a broken answer, wrong OAuth client settings. `invalidAnswer`:
   * a JSON answer not of the shape read, or past its bounds (parts, nesting, headers).
   * `mailbox`: about no call's subject (the token endpoint refused the OAuth client, an answer
   * that broke on the way): a message being fetched then waits, never skipped.
   */
  | { kind: 'failed'; reason: string; invalidAnswer?: true; mailbox?: true };

/** Every outcome but a value. */
export type GmailFailure = Exclude<GmailOutcome<never>, { kind: 'ok' }>;

// 403 reasons that are rate limits, not refusals (Gmail's error guide).
const RATE_LIMIT_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded']);
// Only reasons of this shape are repeated in a failure's reason.
const REASON_SHAPE = /^[A-Za-z_]{1,64}$/;

type GoogleError = { reasons: string[]; status?: string };

/** The reasons and status of Google's error JSON; empty when the answer has none. */
export function readGoogleError(json: unknown): GoogleError {
  const error = field(json, 'error');
  const status = field(error, 'status');
  const errors = field(error, 'errors');
  const reasons = Array.isArray(errors)
    ? errors
        .slice(0, 16)
        .map((item) => field(item, 'reason'))
        .filter((reason): reason is string => typeof reason === 'string')
        .filter((reason) => REASON_SHAPE.test(reason))
    : [];
  return typeof status === 'string' && REASON_SHAPE.test(status)
    ? { reasons, status }
    : { reasons };
}

/** Classify a non-2xx, non-401, non-404 Gmail answer. */
export function classifyRefusal(
  status: number,
  json: unknown,
  retryAfter: string | string[] | undefined,
  nowMs = Date.now(),
): GmailFailure {
  const google = readGoogleError(json);
  const named = google.reasons[0] ?? google.status;
  const reason = `Gmail HTTP ${status}${named ? ` (${named})` : ''}`;
  const rateLimited =
    status === 429 ||
    status >= 500 ||
    google.reasons.some((r) => RATE_LIMIT_REASONS.has(r)) ||
    (status === 403 && google.status === 'RESOURCE_EXHAUSTED' && google.reasons.length === 0);
  if (rateLimited) {
    const wait = retryAfterMs(retryAfter, nowMs);
    return wait === undefined
      ? { kind: 'backoff', reason }
      : { kind: 'backoff', reason, retryAfterMs: Math.min(wait, MAX_RETRY_AFTER_MS) };
  }
  if (status === 403) return { kind: 'forbidden', reason };
  return { kind: 'failed', reason };
}

/** Map an exchange that brought no whole answer to an outcome. */
export function noAnswer(outcome: Exclude<OutboundResult, { kind: 'answer' }>): GmailFailure {
  switch (outcome.kind) {
    case 'too_large':
      return { kind: 'too_large', maxBytes: outcome.maxBytes };
    case 'aborted':
      return { kind: 'aborted' };
    // How the answer travelled, not what was asked: a message being fetched waits.
    case 'headers_too_large':
      return { kind: 'failed', reason: 'Gmail answer headers too large', mailbox: true };
    case 'too_fragmented':
      return { kind: 'failed', reason: 'Gmail answer came in too many tiny pieces', mailbox: true };
    case 'timeout':
      return { kind: 'backoff', reason: 'Gmail did not answer in time' };
    default:
      return { kind: 'backoff', reason: `Gmail unreachable: ${outcome.code}` };
  }
}

/** Map a token source failure to a Gmail outcome. */
export function tokenFailure(failure: TokenFailure): GmailFailure {
  if (failure.kind === 'needs_consent') return { kind: 'needs_consent' };
  if (failure.kind === 'misconfigured')
    return { kind: 'failed', reason: failure.reason, mailbox: true };
  if (failure.kind === 'aborted') return failure;
  return failure.retryAfterMs === undefined
    ? { kind: 'backoff', reason: failure.reason }
    : { kind: 'backoff', reason: failure.reason, retryAfterMs: failure.retryAfterMs };
}
