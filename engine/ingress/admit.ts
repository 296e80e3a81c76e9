/**
 * The guard stage: everything decided from the request line and headers
 * alone, before a byte of the body is read, so refusals stay cheap:
 * path, method, failed-auth lock, token-in-query, token.
 */
import type { IncomingMessage } from 'node:http';
import type { Config } from '../schemas/config.ts';
import { createTokenCheck, presentedToken } from './auth.ts';
import { type ClientAddressResolver, limiterKey } from './client-address.ts';
import { HookError } from './errors.ts';
import type { AuthFailureLimiter } from './rate-limit.ts';

/** What the guard lets through: the hook name and who asked. */
export type Admitted = { hook: string; client: string; pathname: string; query: string };

// Refusals without per-request details are built once: a flood of them costs no allocations.
const NOT_FOUND = new HookError('not_found');
const METHOD_NOT_ALLOWED = new HookError('method_not_allowed', undefined, {
  headers: { allow: 'POST' },
});
const TOKEN_IN_QUERY = new HookError('token_in_query');
const UNAUTHORIZED = new HookError('unauthorized', undefined, {
  headers: { 'www-authenticate': 'Bearer' },
});

// Query parameter names (compared case-insensitively, `-` as `_`) that would put a credential in
// URLs and logs.
const TOKEN_PARAMS: ReadonlySet<string> = new Set([
  'token',
  'access_token',
  'auth_token',
  'hook_token',
  'x_hookgate_token',
]);

// Percent-decoding rounds for a name: a proxy or framework in front may decode once more.
const DECODE_ROUNDS = 3;

/** A query parameter name as any server in the chain might read it. */
function paramName(raw: string): string {
  let name = raw.replaceAll('+', ' ');
  for (let round = 0; round < DECODE_ROUNDS && name.includes('%'); round++) {
    name = name.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
  // C parsers stop at NUL; `name[]`, `name[a][b]` are the parameter `name` in several frameworks.
  const nul = name.indexOf('\0');
  if (nul >= 0) name = name.slice(0, nul);
  const bracket = name.indexOf('[');
  if (bracket >= 0) name = name.slice(0, bracket);
  // PHP reads `.` and inner blanks in a name as `_` (`access.token` is `access_token` there).
  return name.trim().toLowerCase().replace(/[-. ]/g, '_');
}

/**
 * True when any query parameter name is a token carrier, in any case or percent-encoding
 * (`&` and `;` both separate parameters, as some servers read them).
 */
export function queryCarriesToken(query: string): boolean {
  if (!query) return false;
  for (const pair of query.split(/[&;]/)) {
    const eq = pair.indexOf('=');
    if (TOKEN_PARAMS.has(paramName(eq < 0 ? pair : pair.slice(0, eq)))) return true;
  }
  return false;
}

/** Build the guard for one configuration. Throws HookError on refusal. */
export function createGuard(
  config: Config,
  limiter: AuthFailureLimiter,
  resolveClient: ClientAddressResolver,
  now: () => number = Date.now,
): (req: IncomingMessage) => Admitted {
  const prefix = `${config.hooks.path}/`;
  const enabled = config.hooks.enabled;
  const tokenMatches = createTokenCheck(config.hooks.token ?? '');

  return function guard(req) {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? '' : url.slice(q + 1);
    if (!enabled || !pathname.startsWith(prefix)) throw NOT_FOUND;
    const forwarded = req.headers['x-forwarded-for'];
    const client = resolveClient(
      req.socket.remoteAddress,
      Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
    );
    const key = limiterKey(client);
    const at = now();
    // A locked address is refused before its token is looked at: a right guess
    // must not be told apart from a wrong one while the lock lasts.
    const lockedFor = limiter.lockedFor(key, at);
    if (lockedFor > 0) throw rateLimited(lockedFor);
    // After the lock: a locked address gets 429 for every request to a hook, whatever its method.
    if (req.method !== 'POST') throw METHOD_NOT_ALLOWED;
    // Refused before authentication, and not counted as a failure (spec 5.3).
    if (queryCarriesToken(query)) throw TOKEN_IN_QUERY;
    if (tokenMatches(presentedToken(req.rawHeaders))) {
      limiter.reset(key);
      return { hook: pathname.slice(prefix.length), client, pathname, query };
    }
    limiter.recordFailure(key, at);
    throw UNAUTHORIZED;
  };
}

function rateLimited(retryAfterSeconds: number): HookError {
  return new HookError('rate_limited', undefined, {
    headers: { 'retry-after': String(retryAfterSeconds) },
  });
}
