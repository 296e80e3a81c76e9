/**
 * Token authentication from the request headers alone (spec 5), in constant
 * time. Both sides are hashed to 32 bytes first: timingSafeEqual throws on
 * unequal lengths, and hashing hides the token's length.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Header carrying the token when Authorization is not used. */
export const TOKEN_HEADER = 'x-hookgate-token';

/** The tokens presented in `Authorization: Bearer` and x-hookgate-token (either may carry it). */
export function presentedTokens(headers: IncomingHttpHeaders): string[] {
  const tokens: string[] = [];
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const space = authorization.indexOf(' ');
    // Scheme is case-insensitive (RFC 9110 11.1).
    if (space > 0 && authorization.slice(0, space).toLowerCase() === 'bearer') {
      const token = authorization.slice(space + 1).trim();
      if (token) tokens.push(token);
    }
  }
  const header = headers[TOKEN_HEADER];
  if (typeof header === 'string' && header.length > 0) tokens.push(header);
  return tokens;
}

/** Build a constant-time checker for one expected token. */
export function createTokenCheck(expected: string): (presented: string | undefined) => boolean {
  const expectedDigest = digest(expected);
  return function tokenMatches(presented) {
    if (presented === undefined) return false;
    return timingSafeEqual(digest(presented), expectedDigest);
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
