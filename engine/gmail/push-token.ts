/**
 * The shared-secret check of a Pub/Sub push (`push.mode: token`): the
 * secret rides in the push URL as `?token=` (accepted on the push route
 * only) or in an `x-gog-token` header. Every presented copy must equal the
 * configured secret; both sides are hashed first so the comparison is
 * constant-time whatever the lengths. The secret is never returned.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** Longest presented token read; the configured one must not be longer. */
export const MAX_PUSH_TOKEN_CHARS = 4096;

/** Where a push may carry its token. */
export type PresentedToken = { tokenHeader?: string; queryToken?: string };

/** Why a presented token was refused. */
export type TokenFailure = 'missing' | 'malformed' | 'token_mismatch';

/** Where the accepted token came from. */
export type TokenIdentity = { mode: 'token'; source: 'query' | 'header' | 'both' };

/** The outcome of one token check. */
export type TokenResult =
  | { ok: true; identity: TokenIdentity }
  | { ok: false; reason: TokenFailure };

function digestOf(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A check of presented tokens against the configured push token. */
export function createTokenCheck(pushToken: string) {
  const expected = digestOf(pushToken);
  // Equal-length digests: timingSafeEqual cannot throw and leaks no length.
  const matches = (presented: string) => timingSafeEqual(digestOf(presented), expected);

  return function checkToken(presented: PresentedToken): TokenResult {
    const { tokenHeader, queryToken } = presented;
    if (tokenHeader === undefined && queryToken === undefined) {
      return { ok: false, reason: 'missing' };
    }
    const given = [tokenHeader, queryToken].filter((value) => value !== undefined);
    if (given.some((value) => value.length > MAX_PUSH_TOKEN_CHARS)) {
      return { ok: false, reason: 'malformed' };
    }
    // Every copy is compared (no early exit), and every copy must match:
    // two different tokens are refused even when one of them is right.
    let allMatch = true;
    for (const value of given) {
      if (!matches(value)) allMatch = false;
    }
    if (!allMatch) return { ok: false, reason: 'token_mismatch' };
    const source = given.length === 2 ? 'both' : tokenHeader === undefined ? 'query' : 'header';
    return { ok: true, identity: { mode: 'token', source } };
  };
}
