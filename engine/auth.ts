/**
 * Token authentication from the request headers alone (spec 5), in constant
 * time: a token of the wrong length costs the same one comparison of the
 * expected token's length as one of the right length, so the time taken
 * tells neither the expected token's bytes nor its length.
 */
import { timingSafeEqual } from 'node:crypto';
import { percentReadings } from './ingress/query-names.ts';

/** Header carrying the token when Authorization is not used. */
export const TOKEN_HEADER = 'x-hookgate-token';

/**
 * The token a request presents: `absent` when no carrier is used, `conflict`
 * when carriers (`Authorization: Bearer`, x-hookgate-token, or one of them
 * repeated) hold different tokens (a request is never let in because one of two credentials is right).
 */
export type PresentedToken =
  | { kind: 'absent' }
  | { kind: 'conflict' }
  | { kind: 'token'; token: string };

const ABSENT: PresentedToken = Object.freeze({ kind: 'absent' });
const CONFLICT: PresentedToken = Object.freeze({ kind: 'conflict' });

/**
 * Read the token carriers from the raw header list, so a repeated carrier
 * counts (Node keeps only the first Authorization in `req.headers`). An empty
 * carrier counts as presented, and is never right.
 */
export function presentedToken(rawHeaders: readonly string[]): PresentedToken {
  let found: string | undefined;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    let value: string | undefined;
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      value = bearerToken(rawHeaders[i + 1] as string);
    } else if (name.length === TOKEN_HEADER.length && name.toLowerCase() === TOKEN_HEADER) {
      value = (rawHeaders[i + 1] as string).trim();
    }
    if (value === undefined) continue;
    if (found !== undefined && found !== value) return CONFLICT;
    found = value;
  }
  return found === undefined ? ABSENT : { kind: 'token', token: found };
}

// Only the Bearer scheme carries our token (scheme case-insensitive, RFC 9110 11.1).
function bearerToken(authorization: string): string | undefined {
  const space = authorization.indexOf(' ');
  const scheme = space < 0 ? authorization : authorization.slice(0, space);
  if (scheme.toLowerCase() !== 'bearer') return undefined;
  return space < 0 ? '' : authorization.slice(space + 1).trim();
}

/** Build a constant-time checker for one expected token. */
export function createTokenCheck(expected: string): (presented: PresentedToken) => boolean {
  const expectedBytes = Buffer.from(expected, 'utf8');
  return function tokenMatches(presented) {
    if (presented.kind !== 'token' || presented.token === '') return false;
    const bytes = Buffer.from(presented.token, 'utf8');
    // Length check before timingSafeEqual (it throws on unequal lengths); the wrong length still
    // pays one comparison of the expected length. Hashing both sides instead cost 0.5 µs more.
    if (bytes.length !== expectedBytes.length) {
      timingSafeEqual(expectedBytes, expectedBytes);
      return false;
    }
    return timingSafeEqual(bytes, expectedBytes);
  };
}

/** Where in a request's URL the hook token may have been put. */
export type UrlTokenCheck = {
  /** The path after the hooks prefix holds it. */
  inPath(hook: string): boolean;
  /** The query string holds it, as a parameter's name or value. */
  inQuery(query: string): boolean;
};

// The shortest token looked for at the edges of a URL's parts, not only as a whole part.
const MIN_EDGE_TOKEN = 12;

/**
 * The hook token put in a URL, where it would reach logs, the 404's message and proxies' access
 * logs: as a path segment or at a segment's start or end (`/hooks/<token>.json`), as a query
 * parameter's name or value or at their edges, raw or percent-encoded (a token with inner
 * spaces can only be in a URL so). Only windows of the token's length at a part's edges are
 * compared, in constant time (a search inside the URL would time the secret); a part shorter
 * than the token costs a length check.
 */
export function createUrlTokenCheck(expected: string): UrlTokenCheck {
  const expectedBytes = Buffer.from(expected, 'utf8');
  const length = expected.length;
  const same = (window: string) => {
    const bytes = Buffer.from(window, 'utf8');
    return bytes.length === expectedBytes.length && timingSafeEqual(bytes, expectedBytes);
  };
  // A short token (the schema allows one) at a part's edge would match ordinary names (`git`
  // in `github`): only whole parts are compared then.
  const edges = length >= MIN_EDGE_TOKEN;
  const atEdges = (part: string) =>
    part.length >= length &&
    (part.length === length || edges) &&
    (same(part.slice(0, length)) ||
      (part.length > length && same(part.slice(part.length - length))));
  // The whole text too: a token may itself hold a separator.
  const holds = (text: string, separators: RegExp) =>
    text.length >= length && (atEdges(text) || text.split(separators).some(atEdges));
  return {
    inPath(hook) {
      if (length === 0 || hook.length < length) return false;
      return percentReadings(hook, false).some((path) => holds(path, /\//));
    },
    inQuery(query) {
      if (length === 0 || query.length < length) return false;
      // Each pair decoded on its own: an encoded `&` or `=` is the token's, not a separator.
      return query
        .split(/[&;]/)
        .some((pair) => percentReadings(pair, true).some((text) => holds(text, /=/)));
    },
  };
}
