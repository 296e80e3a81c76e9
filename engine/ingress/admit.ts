/**
 * The admit stage: what is decided from the request line alone, before the
 * route's own rules apply: the path prefix, who is asking, the failed-auth
 * lock, the method, the message's framing (engine/ingress/framing.ts), and a
 * credential in the query string. It names the route the hook name picks, so
 * whatever it refuses is counted under that route.
 */
import { type PresentedToken, presentedToken, type UrlTokenCheck } from '../auth.ts';
import { type ClientAddressResolver, limiterKey } from '../client-address.ts';
import type { Verification } from '../envelope.ts';
import { HookError } from '../errors.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import type { Exchange, Stage } from './exchange.ts';
import type { RouteTable } from './routes.ts';
import { framingRefusal } from './framing.ts';
import { queryCarriesToken } from './query-token.ts';

// Refusals without per-request details are built once: a flood of them costs no allocations.
const NOT_FOUND = new HookError('not_found');
const METHOD_NOT_ALLOWED = new HookError('method_not_allowed', undefined, {
  headers: { allow: 'POST' },
});
const TOKEN_IN_QUERY = new HookError('token_in_query');

export type AdmitSettings = {
  enabled: boolean;
  /** The route a hook name picks: named as soon as the name is known, whatever answers. */
  routes: RouteTable;
  /** Whether a request presents the hook token where it belongs (a header). */
  tokenMatches: (presented: PresentedToken) => boolean;
  hooksPath: string;
  limiter: AuthFailureLimiter;
  resolveClient: ClientAddressResolver;
  /** Where the hook token may have been put in the URL. */
  urlToken: UrlTokenCheck;
};

const TOKEN_IN_PATH = new HookError('token_in_path');

/** How a caller the hook token authenticated is verified (no signature, no delivery id). */
export const BY_TOKEN: Verification = Object.freeze({ scheme: 'token' });
// What the request line says of a path that holds the token.
const HIDDEN_HOOK = '(holds the hook token)';

/** Build the admit stage. GET passes only towards a route's subscription handshake. */
export function createAdmit({
  enabled,
  hooksPath,
  limiter,
  resolveClient,
  urlToken,
  tokenMatches,
  routes,
}: AdmitSettings): Stage {
  const prefix = `${hooksPath}/`;
  return function admit(x: Exchange) {
    const { path: url, userinfo } = originForm(x.source.url);
    // user:password@ in the target (no sender should send it): credentials in a URL, refused
    // before anything reads or logs them, as a token in the path or query is.
    if (userinfo) return CREDENTIALS_IN_URL;
    const q = url.indexOf('?');
    const pathname = q < 0 ? url : url.slice(0, q);
    if (!enabled || !pathname.startsWith(prefix)) return NOT_FOUND;
    x.pathname = pathname;
    x.query = q < 0 ? '' : url.slice(q + 1);
    x.hook = pathname.slice(prefix.length);
    // Before anything logs the name or looks the route up: the name is hidden everywhere.
    const inPath = urlToken.inPath(x.hook);
    if (inPath) {
      x.hook = HIDDEN_HOOK;
      x.pathname = `${prefix}${HIDDEN_HOOK}`;
    }
    const forwarded = x.source.headers['x-forwarded-for'];
    x.client = resolveClient(
      x.source.remoteAddress,
      Array.isArray(forwarded) ? forwarded.join(',') : forwarded,
    );
    // Named before any refusal: every answer to a served route's name, whatever its method or
    // the stage that gives it, is counted under that route (the catch-all's for any other).
    x.route = routes.find(x.hook);
    x.limiterKey = limiterKey(x.client);
    x.log['hook'] = x.hook;
    x.log['client'] = x.client;
    // A locked address is refused before its credentials are looked at: a right guess
    // must not be told apart from a wrong one while the lock lasts.
    const lockedFor = limiter.lockedFor(x.limiterKey, x.arrivedAtMs);
    if (lockedFor > 0) return rateLimited(lockedFor);
    // After the lock: a locked address gets 429 for every request to a hook, whatever its method.
    const method = x.source.method;
    if (method !== 'POST' && method !== 'GET') return METHOD_NOT_ALLOWED;
    // Host, Transfer-Encoding, Expect: answered here, as JSON and logged, rather than by Node.
    const framing = framingRefusal(x.source);
    if (framing) return framing;
    // A token parameter by its name: refused before authentication, not counted (spec 5.3).
    // Whatever its value, so the answer says nothing of it.
    if (queryCarriesToken(x.query)) return TOKEN_IN_QUERY;
    // The hook token itself in the path or a query value is told apart from a wrong guess only
    // to a request that presents the token in its header too: told to anyone else (a replayer of
    // a captured signed delivery included), the answer would confirm a guess, and a wrong guess
    // (an unknown hook, an ordinary parameter) is not counted toward the lock. Otherwise the
    // request goes on as any other would: the path's name hidden (no hook has it), the query as
    // sent but marked, so no log or journal keeps it.
    const inQuery = urlToken.inQuery(x.query);
    if ((inPath || inQuery) && tokenMatches(presentedToken(x.source.rawHeaders))) {
      // The hook token authenticated the caller: the mistake is its own, not anyone's.
      x.verification = BY_TOKEN;
      return inPath ? TOKEN_IN_PATH : TOKEN_IN_QUERY;
    }
    if (inQuery) x.queryHoldsToken = true;
    return undefined;
  };
}

// A request target's scheme and authority (`http://host:port`), in the absolute form.
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;
const CREDENTIALS_IN_URL = new HookError('credentials_in_url');

/**
 * The request target as a path and query. HTTP/1.1 servers must accept the absolute form
 * (`POST http://host/hooks/wake`, what a client configured to use a proxy sends): its path is
 * the request's, the authority is dropped (routes do not depend on the host). Pure.
 */
export function originForm(target: string): { path: string; userinfo: boolean } {
  if (target.charCodeAt(0) === 0x2f) return { path: target, userinfo: false };
  const authority = ABSOLUTE_FORM.exec(target);
  if (!authority) return { path: target, userinfo: false };
  const rest = target.slice(authority[0].length);
  return { path: rest.startsWith('/') ? rest : `/${rest}`, userinfo: authority[0].includes('@') };
}

/** 405 for a method the route does not take. */
export function methodNotAllowed(): HookError {
  return METHOD_NOT_ALLOWED;
}

// The last 429 built: a locked-out flood asks for the same seconds many times in a row.
let lastRateLimited: { seconds: number; error: HookError } | undefined;

/** 429 for an address that is locked out, with the seconds until the lock ends. */
export function rateLimited(retryAfterSeconds: number): HookError {
  if (lastRateLimited?.seconds !== retryAfterSeconds) {
    const error = new HookError('rate_limited', undefined, {
      headers: { 'retry-after': String(retryAfterSeconds) },
    });
    lastRateLimited = { seconds: retryAfterSeconds, error };
  }
  return lastRateLimited.error;
}
