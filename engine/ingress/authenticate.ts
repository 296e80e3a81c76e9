/**
 * The authenticate stages. Before the body: the hook token (when the route
 * requires it) and everything a signature scheme can check from the headers
 * alone; after a bounded read, the signature over the raw bytes, before
 * anything parses them. Every failure is the same 401 and counts toward the
 * per-address failed-auth limit; what failed goes to the log by name only.
 */
import { presentedToken } from '../auth.ts';
import type { AuthFailure } from '../auth/verifier.ts';
import { HookError } from '../errors.ts';
import { authFailed } from '../observe/events.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import type { PresentedToken } from '../auth.ts';
import { BY_TOKEN, rateLimited } from './admit.ts';
import type { RouteGate } from './routes.ts';
import { EVERY_HEADER } from './delivery-ids.ts';
import { type Answer, type Exchange, had, type Stage } from './exchange.ts';
import { isSslCheck, maySslCheck } from './slack-probe.ts';

// One body for every failure: nothing tells a guesser which part was wrong.
const UNAUTHORIZED = new HookError('unauthorized', undefined, {
  headers: { 'www-authenticate': 'Bearer' },
});

const SSL_CHECK_ANSWER: Answer = Object.freeze({ kind: 'json', status: 200, body: '{"ok":true}' });

export type AuthenticateSettings = {
  limiter: AuthFailureLimiter;
  tokenMatches: (presented: PresentedToken) => boolean;
};

/** Count a failure for the client, then refuse with the generic 401 (only failures wait on the count). */
export function refuseAuth(
  x: Exchange,
  limiter: AuthFailureLimiter,
  failure: AuthFailure | 'token',
): HookError | Promise<HookError> {
  const counted = limiter.recordFailure(x.limiterKey, x.arrivedAtMs);
  x.log['authFailure'] = failure;
  if (authFailed.hasSubscribers && !x.preview)
    authFailed.publish({ route: x.route?.name ?? '', failure });
  // Counted before the answer: a guesser who waits for each 401 meets the lock on the next try.
  return counted ? counted.then(() => UNAUTHORIZED) : UNAUTHORIZED;
}

/** The stage before the body: hook token and the signature scheme's header checks. */
export function createAuthenticateHeaders({ limiter, tokenMatches }: AuthenticateSettings): Stage {
  function afterToken(x: Exchange, gate: RouteGate): undefined | HookError | Promise<HookError> {
    if (gate.verifier) {
      const failure =
        idHeaderRepeated(x) ?? gate.verifier.precheck(x.headers, seconds(x.arrivedAtMs));
      // Slack sends its SSL check unsigned: read on (a few bytes) to see whether it is one.
      if (failure === 'missing' && gate.scheme === 'slack' && maySslCheck(x.headers)) {
        x.unsignedProbe = true;
        return undefined;
      }
      if (failure) return refuseAuth(x, limiter, failure);
    } else {
      x.verification = BY_TOKEN;
    }
    return undefined;
  }
  return function authenticateHeaders(x: Exchange) {
    const { gate } = had(x.route, 'route');
    if (gate.token) {
      if (!tokenMatches(presentedToken(x.source.rawHeaders)))
        return refuseAuth(x, limiter, 'token');
      // Only the hook token clears the count: it is the one credential a guesser must know.
      // Only a count this instance holds: a success without earlier failures writes nothing.
      // Not waited for: a shared store's reset queues behind the counts, which a flood of
      // wrong tokens can make long, and the request is authenticated either way (the wrapper
      // of the limiter reports a reset the store refused).
      if (limiter.hasFailures(x.limiterKey)) void limiter.reset(x.limiterKey);
    }
    return afterToken(x, gate);
  };
}

/** The stage after the bounded read: the signature over the raw bytes, before any parsing. */
export function createAuthenticateBody({ limiter }: Pick<AuthenticateSettings, 'limiter'>): Stage {
  return function authenticateBody(x: Exchange) {
    const { gate } = had(x.route, 'route');
    if (!gate.verifier) return undefined;
    // Again after the upload: guesses sent side by side while the lock began get no MAC work.
    const lockedFor = limiter.lockedFor(x.limiterKey, Date.now());
    if (lockedFor > 0) return rateLimited(lockedFor);
    if (x.unsignedProbe) {
      if (!isSslCheck(had(x.raw, 'raw'))) return refuseAuth(x, limiter, 'missing');
      // Nothing is stored or run for it, and nothing was guessed: not a failure.
      x.log['handshake'] = 'ssl_check';
      x.log['scheme'] = 'unsigned';
      return SSL_CHECK_ANSWER;
    }
    const result = gate.verifier.verify(x.headers, had(x.raw, 'raw'), seconds(x.arrivedAtMs));
    if (typeof result === 'string') return refuseAuth(x, limiter, result);
    // A query holding the hook token is answered as any other would be: a valid signature
    // proves a captured request, not the secret, and resent with guesses in its (unsigned)
    // query a 400 would tell the right one. The request line says so, for the operator only.
    if (x.queryHoldsToken) x.log['queryHoldsToken'] = true;
    // No reset of the failure count: a valid signature proves a captured request, not a secret,
    // and a replayed one must not wipe out the count of token guesses sent beside it.
    // Slack marks its own retries; the delivery id makes them replays, this says why one came.
    const retry = gate.scheme === 'slack' && x.headers('x-slack-retry-num').length > 0;
    x.verification = { ...result, ...(retry && { retry }) };
    x.log['scheme'] = result.scheme;
    return undefined;
  };
}

// Which copy of a repeated delivery-id header an intermediary keeps is up to whoever added it.
function idHeaderRepeated(x: Exchange): AuthFailure | undefined {
  const names = x.route?.deliveryId?.headers;
  if (names === undefined) return undefined;
  if (names[0] === EVERY_HEADER) return anyRepeated(x.source.rawHeaders) ? 'duplicate' : undefined;
  for (const name of names) if (x.headers(name).length > 1) return 'duplicate';
  return undefined;
}

function anyRepeated(raw: readonly string[]): boolean {
  const seen = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (seen.has(name)) return true;
    seen.add(name);
  }
  return false;
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}
