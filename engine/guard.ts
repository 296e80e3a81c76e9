/**
 * The guard stage: everything decided from the request line and headers
 * alone, before a byte of the body is read, so refusals stay cheap:
 * path, method, token-in-query, token, failed-auth rate limit.
 */
import type { IncomingMessage } from 'node:http';
import type { Config } from '../schemas/config.ts';
import { createTokenCheck, presentedTokens } from './auth.ts';
import type { ClientAddressResolver } from './client-address.ts';
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
    // Refused before authentication, and not counted as a failure (spec 5.3).
    if (query && new URLSearchParams(query).has('token')) throw TOKEN_IN_QUERY;
    const forwarded = req.headers['x-forwarded-for'];
    const client = resolveClient(
      req.socket.remoteAddress,
      Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
    );
    if (presentedTokens(req.headers).some(tokenMatches)) {
      limiter.reset(client);
      return { hook: pathname.slice(prefix.length), client, pathname, query };
    }
    const verdict = limiter.recordFailure(client, now());
    if (verdict.limited) {
      throw new HookError('rate_limited', undefined, {
        headers: { 'retry-after': String(verdict.retryAfterSeconds) },
      });
    }
    throw UNAUTHORIZED;
  };
}
