/**
 * The access-token source of one Gmail account: trades the refresh token
 * for an access token at the OAuth token endpoint, keeps it until a minute
 * before it expires, shares one refresh among concurrent callers, and says
 * why no token could be had as data. No token or secret ever appears in a
 * reason: reasons carry only the status and the endpoint's error code.
 */
import { outboundCall } from '../outbound/http-client.ts';
import { parseAnswerJson } from '../outbound/answer-json.ts';
import { retryAfterMs } from '../outbound/retry-after.ts';
import { createSharedCall } from '../outbound/shared-call.ts';
import { field } from './json-fields.ts';

/** Refresh this long before the token expires (at most half its lifetime). */
export const TOKEN_MARGIN_MS = 60_000;
/** Longest lifetime believed from `expires_in` (Google grants about an hour). */
export const MAX_TOKEN_LIFETIME_S = 86_400;
/** Longest access token accepted (Google documents up to 2048 bytes). */
export const MAX_ACCESS_TOKEN_LENGTH = 4096;
/** Most bytes of a token endpoint answer read. */
export const MAX_TOKEN_ANSWER_BYTES = 16 * 1024;
/** Longest wait a Retry-After can impose. */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/** The OAuth client and refresh token of one account. */
export type TokenSourceOptions = {
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  /** The config's refresh token, else a stored one; read at every refresh. */
  refreshToken: () => string | undefined;
  now?: () => number;
  timeoutMs: number;
};

/** Why no access token could be had. */
export type TokenFailure =
  /** The refresh token was refused (`invalid_grant`): a person must consent again. */
  | { kind: 'needs_consent' }
  /** The endpoint could not answer now (network, timeout, 429, 5xx, a broken answer). */
  | { kind: 'unavailable'; reason: string; retryAfterMs?: number }
  /** The client settings are wrong (`invalid_client` and the like): retrying will not help. */
  | { kind: 'misconfigured'; reason: string }
  /** The caller's signal ended the wait (the shared refresh goes on for the others, if any). */
  | { kind: 'aborted' };

/** An access token, or why there is none. */
export type TokenResult = { kind: 'ok'; accessToken: string } | TokenFailure;

/** One account's access tokens. */
export type TokenSource = {
  /** A valid access token, refreshed when none is cached or it is about to expire. */
  accessToken(signal?: AbortSignal): Promise<TokenResult>;
  /** Forget the cached token (after Gmail answered 401); with `rejected`, only if it is still that one. */
  invalidate(rejected?: string): void;
};

// Printable ASCII only: the token goes into an Authorization header (no CR/LF smuggling).
const TOKEN_SHAPE = /^[\x21-\x7e]+$/;
// Only an error code of this shape is repeated in a reason; anything else might echo a secret.
const ERROR_CODE = /^[a-z_]{1,64}$/;

/** Create the token source of one account. */
export function createTokenSource(options: TokenSourceOptions): TokenSource {
  const now = options.now ?? Date.now;
  let cached: { value: string; refreshAt: number } | undefined;
  // The refresh token Google refused: never sent again; a new one (re-consent) is tried.
  let refused: string | undefined;

  const refresh = async (signal: AbortSignal): Promise<TokenResult> => {
    const refreshToken = options.refreshToken();
    if (!refreshToken) return { kind: 'misconfigured', reason: 'no refresh token' };
    if (refreshToken === refused) return { kind: 'needs_consent' };
    const fetched = await requestToken(options, refreshToken, now(), signal);
    if ('refreshAt' in fetched) {
      cached = fetched;
      return { kind: 'ok', accessToken: fetched.value };
    }
    if (fetched.kind === 'needs_consent') refused = refreshToken;
    return fetched;
  };
  // One refresh for all callers, bounded by its own timeout, so one caller giving up does not
  // fail the others; dropped once none waits.
  const shared = createSharedCall(refresh, { kind: 'aborted' } as TokenResult);

  return {
    accessToken(signal) {
      if (cached && now() < cached.refreshAt) {
        return Promise.resolve({ kind: 'ok', accessToken: cached.value });
      }
      return shared.join(signal);
    },
    invalidate(rejected) {
      if (rejected === undefined || cached?.value === rejected) cached = undefined;
    },
  };
}

type Fetched = { value: string; refreshAt: number } | TokenFailure;

async function requestToken(
  options: TokenSourceOptions,
  refreshToken: string,
  nowMs: number,
  signal: AbortSignal,
): Promise<Fetched> {
  const form = new URLSearchParams({ client_id: options.clientId });
  if (options.clientSecret) form.set('client_secret', options.clientSecret);
  form.set('grant_type', 'refresh_token');
  form.set('refresh_token', refreshToken);
  const outcome = await outboundCall(options.tokenUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: form.toString(),
    timeoutMs: options.timeoutMs,
    signal,
    maxBytes: MAX_TOKEN_ANSWER_BYTES,
  });
  if (outcome.kind === 'too_large') {
    return { kind: 'unavailable', reason: `token answer over ${outcome.maxBytes} bytes` };
  }
  if (outcome.kind !== 'answer') {
    const detail = outcome.kind === 'failed' ? `: ${outcome.code}` : '';
    return { kind: 'unavailable', reason: `token endpoint ${outcome.kind}${detail}` };
  }
  const json = parseAnswerJson(outcome.text);
  if (outcome.status >= 200 && outcome.status < 300) return readGrant(json, nowMs);
  return readRefusal(outcome.status, json, outcome.headers['retry-after'], nowMs);
}

/** The access token and its refresh time from a 2xx answer, or why the answer is unusable. */
export function readGrant(json: unknown, nowMs: number): Fetched {
  const token = field(json, 'access_token');
  if (
    typeof token !== 'string' ||
    token.length > MAX_ACCESS_TOKEN_LENGTH ||
    !TOKEN_SHAPE.test(token)
  ) {
    return { kind: 'unavailable', reason: 'token answer without a usable access_token' };
  }
  const seconds = field(json, 'expires_in');
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds) || seconds <= 0) {
    return { kind: 'unavailable', reason: 'token answer without a positive integer expires_in' };
  }
  const lifetimeMs = Math.min(seconds, MAX_TOKEN_LIFETIME_S) * 1000;
  return {
    value: token,
    refreshAt: nowMs + lifetimeMs - Math.min(TOKEN_MARGIN_MS, lifetimeMs / 2),
  };
}

/** Classify a refusal of the token endpoint (RFC 6749 §5.2 error codes). */
export function readRefusal(
  status: number,
  json: unknown,
  retryAfter: string | string[] | undefined,
  nowMs: number,
): TokenFailure {
  const raw = field(json, 'error');
  const code = typeof raw === 'string' && ERROR_CODE.test(raw) ? raw : undefined;
  // Google answers invalid_grant with 400; the code decides, whatever the status.
  if (code === 'invalid_grant') return { kind: 'needs_consent' };
  const reason = `token endpoint HTTP ${status}${code ? ` (${code})` : ''}`;
  if (status === 429 || status >= 500) {
    const wait = retryAfterMs(retryAfter, nowMs);
    return wait === undefined
      ? { kind: 'unavailable', reason }
      : { kind: 'unavailable', reason, retryAfterMs: Math.min(wait, MAX_RETRY_AFTER_MS) };
  }
  return { kind: 'misconfigured', reason };
}
