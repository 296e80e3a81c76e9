/**
 * The `msteams` channel: a plain-text activity to a conversation through the
 * Bot Framework Connector (`POST {serviceUrl}/v3/conversations/{id}/activities`),
 * authenticated with a client-credentials token from Microsoft Entra that is
 * cached until shortly before it expires. A 401 refreshes the token once and
 * resends once; Teams' `error.code` and status decide retry or failure.
 */
import type { TeamsSettings } from '../../../schemas/channels.ts';
import type { ChannelAdapter, SendResult } from '../adapter.ts';
import { answerCode, answerDetail, urlSecrets } from '../../outbound/answer-detail.ts';
import { type HttpOutcome, type HttpReply, httpCall, postJson } from './http-call.ts';
import { retryAfterMs } from '../../outbound/retry-after.ts';
import { createSharedCall } from '../../outbound/shared-call.ts';

/**
 * Longest part, in UTF-16 code units of its text as escaped in the activity's JSON (measure
 * below). Teams takes a message of about 28 KB: each activity stays within 28 KB of UTF-16
 * (14,336 code units of serialised JSON), 12,000 for the text and the rest for its other fields.
 */
export const TEAMS_MAX_LENGTH = 12_000;

/** A part's length as escaped in JSON (quotes, backslashes and line breaks count twice). */
function escapedLength(part: string): number {
  return JSON.stringify(part).length - 2;
}

/** Longest conversation id we accept (ids are opaque; real ones are far shorter). */
export const TEAMS_MAX_RECIPIENT_LENGTH = 512;

/** Refresh a cached token this long before it expires (at most half its lifetime). */
export const TEAMS_TOKEN_MARGIN_MS = 5 * 60_000;
/** Lifetimes believed from `expires_in` (Entra grants about an hour), in seconds. */
export const TEAMS_TOKEN_LIFETIME_S = { min: 1, max: 86_400 } as const;

const SCOPE = 'https://api.botframework.com/.default';

// An OAuth bearer token (RFC 6750's b64token; Entra's are JWTs of a few KB). Any other string
// cannot be sent as a header value, or not to any server: cached, it failed every send for as
// long as the endpoint said it lived, with no 401 ever coming to drop it.
const ACCESS_TOKEN = /^[A-Za-z0-9\-._~+/]{1,16384}=*$/;

// The token endpoint's OAuth error (`invalid_client`) and the Connector's error code
// (`BadArgument`, `InvalidBotApiHost`): only these shapes are echoed.
const OAUTH_ERROR = /^[a-z_]{1,64}$/;
const CONNECTOR_CODE = /^[A-Za-z][A-Za-z0-9_.]{0,63}$/;

/** Why `to` is not a plausible Teams conversation id, or null when it is. */
export function checkTeamsRecipient(to: string): string | null {
  if (to.length === 0) return 'expected a Teams conversation id';
  if (/\s/.test(to)) return 'a Teams conversation id contains no whitespace';
  // A dot segment is no id: the URL `…/conversations/../activities` reaches another endpoint.
  if (to === '.' || to === '..') return 'expected a Teams conversation id, not a dot segment';
  if (to.length > TEAMS_MAX_RECIPIENT_LENGTH) {
    return `a Teams conversation id has at most ${TEAMS_MAX_RECIPIENT_LENGTH} characters`;
  }
  return null;
}

/** Microsoft's client-credentials token endpoint for a tenant. */
export function defaultTeamsTokenUrl(tenantId: string): string {
  return `https://login.microsoftonline.com/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`;
}

/** Create the Teams adapter from its validated settings. */
export function createTeamsAdapter(settings: Record<string, unknown>): ChannelAdapter {
  const s = settings as TeamsSettings;
  const tokens = createTokenCache(s);
  const base = s.serviceUrl.replace(/\/+$/, '');
  const secrets = [s.appPassword, ...urlSecrets(s.serviceUrl)];

  const attempt = async (to: string, text: string, signal?: AbortSignal) => {
    const token = await tokens.get(signal);
    if (token.result) return { result: token.result };
    const url = `${base}/v3/conversations/${encodeURIComponent(to)}/activities`;
    const activity = { type: 'message', text, textFormat: 'plain' };
    const headers = { authorization: `Bearer ${token.value}` };
    const outcome = await postJson(url, activity, { headers, timeoutMs: s.timeoutMs, signal });
    if (outcome.result) return { result: outcome.result };
    const rejected = outcome.reply.status === 401 ? token.value : undefined;
    return { result: classifyTeamsReply(outcome.reply, [...secrets, token.value]), rejected };
  };

  return {
    id: 'msteams',
    maxLength: TEAMS_MAX_LENGTH,
    measure: escapedLength,
    checkRecipient: checkTeamsRecipient,
    async send(to, text, signal) {
      const first = await attempt(to, text, signal);
      if (first.rejected === undefined) return first.result;
      // An expired or revoked token also yields 401: refresh once and resend once.
      tokens.invalidate(first.rejected);
      return (await attempt(to, text, signal)).result;
    },
  };
}

type TokenOutcome =
  | { value: string; result?: undefined }
  | { value?: undefined; result: SendResult };

type TokenCache = {
  /** A valid token, fetched when none is cached or it is about to expire. */
  get(signal?: AbortSignal): Promise<TokenOutcome>;
  /** Forget `value` if it is still the cached token. */
  invalidate(value: string): void;
};

// A sender whose own signal ended its wait for the token: nothing was posted.
const INTERRUPTED: TokenOutcome = {
  result: { status: 'retry', reason: 'Teams token request: interrupted' },
};

function createTokenCache(s: TeamsSettings): TokenCache {
  let cached: { value: string; refreshAt: number } | undefined;
  // Shared by concurrent sends under no sender's signal (one sender's abort must not fail the
  // token for the others), bounded by its own timeout (timeoutMs).
  const fetch = createSharedCall(async (signal): Promise<TokenOutcome> => {
    const outcome = await requestToken(s, signal);
    if (!outcome.token) return { result: outcome.result };
    cached = { value: outcome.token.value, refreshAt: outcome.token.refreshAt };
    return { value: outcome.token.value };
  }, INTERRUPTED);
  return {
    get(signal) {
      if (cached && Date.now() < cached.refreshAt) return Promise.resolve({ value: cached.value });
      return fetch.join(signal);
    },
    invalidate(value) {
      if (cached?.value === value) cached = undefined;
    },
  };
}

/** A token with the time to refresh it, or why none could be had. */
export type TokenFetch =
  | { token: { value: string; refreshAt: number }; result?: undefined }
  | { token?: undefined; result: SendResult };

async function requestToken(s: TeamsSettings, signal?: AbortSignal): Promise<TokenFetch> {
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: s.appId,
    client_secret: s.appPassword,
    scope: SCOPE,
  });
  const outcome: HttpOutcome = await httpCall(s.tokenUrl ?? defaultTeamsTokenUrl(s.tenantId), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    timeoutMs: s.timeoutMs,
    signal,
  });
  if (outcome.result) {
    // No message was posted: drop the duplicate warning meant for sends (an
    // oversized token answer stays a failure: the endpoint is not behaving).
    return {
      result: {
        ...outcome.result,
        reason: `Teams token request: ${firstClause(outcome.result.reason)}`,
      },
    };
  }
  return readToken(outcome.reply, [s.appPassword, ...urlSecrets(s.tokenUrl)]);
}

/** Map the token endpoint's answer to a token (with its refresh time) or a result. */
export function readToken(
  reply: HttpReply,
  secrets: readonly string[],
  nowMs = Date.now(),
): TokenFetch {
  const json = (reply.json ?? {}) as {
    access_token?: unknown;
    expires_in?: unknown;
    error?: unknown;
    error_description?: unknown;
  };
  const token = answerCode(json.access_token, ACCESS_TOKEN);
  if (reply.status >= 200 && reply.status < 300 && token !== undefined) {
    const lifetimeMs = toSeconds(json.expires_in) * 1000;
    const refreshAt = nowMs + lifetimeMs - Math.min(TEAMS_TOKEN_MARGIN_MS, lifetimeMs / 2);
    return { token: { value: token, refreshAt } };
  }
  const code = answerCode(json.error, OAUTH_ERROR);
  const said = answerDetail(json.error_description, secrets);
  const reason = `Teams token request HTTP ${reply.status}${code ? ` (${code})` : ''}${said ? `: ${said}` : ''}`;
  if (reply.status === 429 || reply.status >= 500) {
    const wait = retryAfterMs(reply.headers['retry-after']);
    return {
      result:
        wait === undefined
          ? { status: 'retry', reason }
          : { status: 'retry', reason, retryAfterMs: wait },
    };
  }
  if (reply.status < 300)
    return { result: { status: 'failed', reason: `${reason}: no usable access_token` } };
  return { result: { status: 'failed', reason: `${reason} (check appId, appPassword, tenantId)` } };
}

// Bounded both ways: a lifetime of 1e308 cached a token for ever (until a 401), one of a
// microsecond fetched a token for every part.
function toSeconds(value: unknown): number {
  const seconds = typeof value === 'string' ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return 3600;
  return Math.min(Math.max(seconds, TEAMS_TOKEN_LIFETIME_S.min), TEAMS_TOKEN_LIFETIME_S.max);
}

function firstClause(reason: string): string {
  return reason.split(';')[0] as string;
}

/** Map a Connector answer to a send result (a 401 here is already after a token refresh). */
export function classifyTeamsReply(reply: HttpReply, secrets: readonly string[]): SendResult {
  const json = (reply.json ?? {}) as {
    id?: unknown;
    error?: { code?: unknown; message?: unknown };
  };
  if (reply.status >= 200 && reply.status < 300) {
    return typeof json.id === 'string'
      ? { status: 'sent', messageId: json.id }
      : { status: 'sent' };
  }
  const code = answerCode(json.error?.code, CONNECTOR_CODE);
  const said = answerDetail(json.error?.message, secrets);
  const base = `Teams HTTP ${reply.status}${code ? ` (${code})` : ''}`;
  const explain = (what: string) => `${base}: ${what}${said ? ` (${said})` : ''}`;
  if (reply.status === 429) {
    const wait = retryAfterMs(reply.headers['retry-after']);
    const reason = explain('throttled');
    return wait === undefined
      ? { status: 'retry', reason }
      : { status: 'retry', reason, retryAfterMs: wait };
  }
  if (reply.status === 412) return { status: 'retry', reason: explain('concurrent operation') };
  if (reply.status >= 502) return { status: 'retry', reason: explain('service unavailable') };
  // 500 is retried like every 5xx, with a warning (Teams says it may or may not have posted).
  if (reply.status === 500) {
    return {
      status: 'retry',
      reason: explain('service error; it may have been posted, a retry can duplicate it'),
    };
  }
  return { status: 'failed', reason: explain(refusal(reply.status, code)) };
}

function refusal(status: number, code: string | undefined): string {
  if (status === 401) return 'rejected even with a fresh token (is the bot registered?)';
  if (code === 'InvalidBotApiHost')
    return 'wrong serviceUrl for this conversation (e.g. a GCC tenant)';
  if (status === 403) return 'the bot may not post in this conversation';
  if (status === 404) return 'conversation not found';
  if (status === 413) return 'message too large; re-split into smaller parts';
  if (status === 500)
    return 'service error (Teams advises not to retry); it may or may not have been posted';
  return 'request refused';
}
