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

// Query parameter names (compared case-insensitively) that would put a credential in URLs and logs.
const TOKEN_PARAMS: ReadonlySet<string> = new Set([
  'token',
  'access_token',
  'auth_token',
  'hook_token',
  'x-hookgate-token',
]);

/** True when any query parameter name is a token carrier, in any case or percent-encoding. */
export function queryCarriesToken(query: string): boolean {
  if (!query) return false;
  for (const name of new URLSearchParams(query).keys()) {
    if (TOKEN_PARAMS.has(name.trim().toLowerCase())) return true;
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
    if (req.method !== 'POST') throw METHOD_NOT_ALLOWED;
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
