/**
 * The Gmail account's access-token source against the local Google
 * stand-in: one refresh per token lifetime (less a minute), one refresh for
 * concurrent callers, invalid_grant as "needs consent" never retried, typed
 * failures for a broken client or endpoint, and hostile token answers.
 */
import { fc, test } from '@fast-check/vitest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createTokenSource,
  MAX_RETRY_AFTER_MS,
  MAX_TOKEN_ANSWER_BYTES,
  MAX_TOKEN_LIFETIME_S,
  readGrant,
  TOKEN_MARGIN_MS,
  type TokenSourceOptions,
} from '../engine/gmail/oauth.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';

let google: GmailStandIn;
let clock: number;

beforeEach(async () => {
  google = await startGmailStandIn();
  clock = 1_000_000;
});
afterEach(() => google.close());

function source(overrides: Partial<TokenSourceOptions> = {}) {
  return createTokenSource({
    tokenUrl: google.tokenUrl,
    clientId: google.clientId,
    clientSecret: google.clientSecret,
    refreshToken: () => google.refreshToken,
    now: () => clock,
    timeoutMs: 5000,
    ...overrides,
  });
}

// No failure may carry the client secret or the refresh token.
function expectNoSecrets(result: unknown): void {
  const text = JSON.stringify(result);
  expect(text).not.toContain(google.clientSecret);
  expect(text).not.toContain(google.refreshToken);
}

describe('refresh and caching', () => {
  it('sends the documented refresh form and caches the access token', async () => {
    const tokens = source();
    const first = await tokens.accessToken();
    const second = await tokens.accessToken();
    expect(first).toEqual({ kind: 'ok', accessToken: 'ya29.stand-in-1' });
    expect(second).toEqual(first);
    expect(google.refreshes()).toBe(1);
    expect(Object.fromEntries(google.tokenForms[0] ?? [])).toEqual({
      client_id: google.clientId,
      client_secret: google.clientSecret,
      grant_type: 'refresh_token',
      refresh_token: google.refreshToken,
    });
  });

  it('leaves client_secret out when the client has none', async () => {
    await source({ clientSecret: undefined }).accessToken();
    expect(google.tokenForms[0]?.has('client_secret')).toBe(false);
  });

  it.each([
    ['just before the margin', 3599 * 1000 - TOKEN_MARGIN_MS - 1, 1],
    ['at the margin (a minute before expiry)', 3599 * 1000 - TOKEN_MARGIN_MS, 2],
    ['after expiry', 3600 * 1000, 2],
  ])('a call %s refreshes %i time(s) in all', async (_when, later, refreshes) => {
    const tokens = source();
    await tokens.accessToken();
    clock += later;
    await tokens.accessToken();
    expect(google.refreshes()).toBe(refreshes);
  });

  it('a token living under two minutes is refreshed at half its lifetime', async () => {
    await google.close();
    google = await startGmailStandIn({ expiresIn: 60 });
    const tokens = source();
    await tokens.accessToken();
    clock += 29_999;
    await tokens.accessToken();
    expect(google.refreshes()).toBe(1);
    clock += 1;
    await tokens.accessToken();
    expect(google.refreshes()).toBe(2);
  });

  it('reads the refresh token at each refresh (a newly stored one is used)', async () => {
    let stored: string | undefined;
    const tokens = source({ refreshToken: () => stored });
    expect(await tokens.accessToken()).toMatchObject({ kind: 'misconfigured' });
    expect(google.tokenForms).toHaveLength(0);
    stored = google.refreshToken;
    expect(await tokens.accessToken()).toMatchObject({ kind: 'ok' });
  });
});

describe('single flight', () => {
  it('ten concurrent callers share one refresh', async () => {
    const tokens = source();
    const results = await Promise.all(Array.from({ length: 10 }, () => tokens.accessToken()));
    expect(google.refreshes()).toBe(1);
    expect(new Set(results.map((r) => JSON.stringify(r))).size).toBe(1);
  });

  it('a caller giving up does not fail the others sharing the refresh', async () => {
    const tokens = source();
    const quitter = new AbortController();
    const gone = tokens.accessToken(quitter.signal);
    const staying = tokens.accessToken();
    quitter.abort();
    expect(await gone).toEqual({ kind: 'aborted' });
    expect(await staying).toMatchObject({ kind: 'ok' });
    expect(google.refreshes()).toBe(1);
  });

  it('a refresh that throws (the stored refresh token unreadable) fails a caller with a signal too, never leaves it waiting', async () => {
    const tokens = source({
      refreshToken: () => {
        throw new Error('token file unreadable');
      },
    });
    const signal = new AbortController().signal;
    await expect(tokens.accessToken(signal)).rejects.toThrow('token file unreadable');
    await expect(tokens.accessToken()).rejects.toThrow('token file unreadable');
  });

  it('invalidate() forces a refresh; invalidate(stale) keeps a newer token', async () => {
    const tokens = source();
    const first = await tokens.accessToken();
    tokens.invalidate();
    const second = await tokens.accessToken();
    expect(second).toEqual({ kind: 'ok', accessToken: 'ya29.stand-in-2' });
    tokens.invalidate(first.kind === 'ok' ? first.accessToken : '');
    expect(await tokens.accessToken()).toEqual(second);
    expect(google.refreshes()).toBe(2);
  });
});

describe('refusals', () => {
  it('invalid_grant is needs_consent, and the refused token is never sent again', async () => {
    google.revokeRefreshToken();
    const tokens = source();
    expect(await tokens.accessToken()).toEqual({ kind: 'needs_consent' });
    expect(await tokens.accessToken()).toEqual({ kind: 'needs_consent' });
    expect(google.tokenForms).toHaveLength(1);
  });

  it('after re-consent (a new refresh token) the source tries again', async () => {
    let stored = 'an-old-refresh-token';
    const tokens = source({ refreshToken: () => stored });
    expect(await tokens.accessToken()).toEqual({ kind: 'needs_consent' });
    stored = google.refreshToken;
    expect(await tokens.accessToken()).toMatchObject({ kind: 'ok' });
  });

  it('a wrong client secret is misconfigured, and the reason names no secret', async () => {
    const result = await source({ clientSecret: 'not-the-secret' }).accessToken();
    expect(result).toEqual({
      kind: 'misconfigured',
      reason: 'token endpoint HTTP 401 (invalid_client)',
    });
    expectNoSecrets(result);
  });

  it.each([
    [503, '7', { kind: 'unavailable', reason: 'token endpoint HTTP 503', retryAfterMs: 7000 }],
    [429, undefined, { kind: 'unavailable', reason: 'token endpoint HTTP 429' }],
    [500, '1.5', { kind: 'unavailable', reason: 'token endpoint HTTP 500', retryAfterMs: 1500 }],
  ])('HTTP %i (Retry-After %s) is unavailable', async (status, retryAfter, expected) => {
    const headers = retryAfter ? { 'retry-after': retryAfter } : undefined;
    google.answerNext({ status, body: '{}', ...(headers && { headers }) }, 'token');
    expect(await source().accessToken()).toEqual(expected);
  });

  it('an unreachable endpoint is unavailable', async () => {
    await google.close();
    const result = await source().accessToken();
    expect(result).toMatchObject({
      kind: 'unavailable',
      reason: 'token endpoint failed: ECONNREFUSED',
    });
  });

  it('a slow endpoint is unavailable after the timeout', async () => {
    google.answerNext({ status: 200, body: '{}', delayMs: 2000 }, 'token');
    const result = await source({ timeoutMs: 100 }).accessToken();
    expect(result).toEqual({ kind: 'unavailable', reason: 'token endpoint timeout' });
  });
});

describe('hostile token answers', () => {
  const ok = { access_token: 'ya29.fine', expires_in: 3599 };
  it.each([
    ['header smuggling: CR/LF in the access token', { ...ok, access_token: 'ya29\r\nx-evil: 1' }],
    [
      'oversized token: an access token past the length bound',
      { ...ok, access_token: 'a'.repeat(5000) },
    ],
    ['type confusion: access_token as a number', { ...ok, access_token: 12345 }],
    ['type confusion: expires_in as a string', { ...ok, expires_in: '3599' }],
    ['negative lifetime', { ...ok, expires_in: -5 }],
    ['fractional lifetime', { ...ok, expires_in: 0.5 }],
    ['missing access_token', { expires_in: 3599 }],
    ['missing expires_in', { access_token: 'ya29.fine' }],
    ['an array instead of an object', [ok]],
  ])('%s is refused as unavailable', async (_attack, body) => {
    google.answerNext({ status: 200, body: JSON.stringify(body) }, 'token');
    expect(await source().accessToken()).toMatchObject({ kind: 'unavailable' });
  });

  it('memory bomb: an endless token answer is cut at the byte cap', async () => {
    google.answerNext({ status: 200, stream: { chunk: 'x'.repeat(8192), count: 10_000 } }, 'token');
    expect(await source().accessToken()).toEqual({
      kind: 'unavailable',
      reason: `token answer over ${MAX_TOKEN_ANSWER_BYTES} bytes`,
    });
  });

  it('deep nesting: a deeply nested token answer is refused without parsing', async () => {
    google.answerNext({ status: 200, body: '['.repeat(10_000) }, 'token');
    expect(await source().accessToken()).toMatchObject({ kind: 'unavailable' });
  });

  it('lifetime inflation: expires_in of years is capped at a day', async () => {
    google.answerNext(
      { status: 200, body: JSON.stringify({ ...ok, expires_in: 10 ** 12 }) },
      'token',
    );
    const tokens = source();
    await tokens.accessToken();
    clock += MAX_TOKEN_LIFETIME_S * 1000;
    expect(await tokens.accessToken()).toEqual({ kind: 'ok', accessToken: 'ya29.stand-in-1' });
  });

  it('endless wait: a Retry-After of years is capped', async () => {
    google.answerNext({ status: 503, headers: { 'retry-after': '999999999' } }, 'token');
    expect(await source().accessToken()).toMatchObject({ retryAfterMs: MAX_RETRY_AFTER_MS });
  });

  it.each([
    ['an error code that echoes the secret', { error: `bad ${'stand-in-client-secret'}` }],
    [
      'a description that echoes the refresh token',
      { error: 'invalid_request', error_description: '1//stand-in-refresh-token' },
    ],
  ])('secret echo: %s never reaches the reason', async (_attack, body) => {
    google.answerNext({ status: 400, body: JSON.stringify(body) }, 'token');
    const result = await source().accessToken();
    expect(result).toMatchObject({ kind: 'misconfigured' });
    expectNoSecrets(result);
  });
});

describe('properties', () => {
  test.prop([fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 0, max: 2 ** 45 })])(
    'any positive lifetime refreshes after half of it and before it ends (capped at a day)',
    (seconds, now) => {
      const grant = readGrant({ access_token: 'ya29.x', expires_in: seconds }, now);
      if (!('refreshAt' in grant)) throw new Error('refused a valid grant');
      const lifetime = Math.min(seconds, MAX_TOKEN_LIFETIME_S) * 1000;
      expect(grant.refreshAt).toBeGreaterThanOrEqual(now + lifetime / 2);
      expect(grant.refreshAt).toBeLessThan(now + lifetime);
    },
  );
});
