/**
 * Provider handshakes, answered by the route instead of becoming actions:
 * Meta's subscription check (GET with hub.verify_token, unsigned, answered
 * with hub.challenge when the verify token matches, else 403), and Slack's
 * url_verification and ssl_check (signed POSTs, answered after verification; an unsigned
 * ssl_check, as Slack sends it, is answered by the authenticate stage: slack-probe.ts).
 */
import { parseQuery } from '../envelope.ts';
import { HookError } from '../errors.ts';
import { authFailed } from '../observe/events.ts';
import type { AuthFailureLimiter } from '../rate-limit.ts';
import { methodNotAllowed } from './admit.ts';
import { type Answer, type Exchange, had, type Stage } from './exchange.ts';

const MISMATCH = new HookError('verify_token_mismatch');
// What a challenge may be when echoed: short, printable ASCII (it is reflected to the caller).
const CHALLENGE = /^[\x21-\x7e]{1,256}$/;

/** The GET subscription handshake; any other GET to a hook is 405. */
export function createSubscribe(limiter: AuthFailureLimiter): Stage {
  return function subscribe(x: Exchange) {
    if (x.source.method !== 'GET') return undefined;
    const { gate } = had(x.route, 'route');
    if (!gate.verifyToken) return methodNotAllowed();
    const query = parseQuery(x.query);
    const token = query['hub.verify_token'];
    if (query['hub.mode'] !== 'subscribe' || token === undefined || !gate.verifyToken(token)) {
      return refuseVerifyToken(x, limiter);
    }
    // No reset of the failure count: a verify token travels in URLs, it is no proof of the hook token.
    const challenge = query['hub.challenge'] ?? '';
    if (!CHALLENGE.test(challenge)) {
      throw new HookError('invalid_payload', 'hub.challenge: must be 1-256 printable characters.');
    }
    x.log['handshake'] = 'subscribe';
    return { kind: 'text', status: 200, body: challenge };
  };
}

/** Count the failure, then refuse with 403 (only failures wait on the count). */
function refuseVerifyToken(
  x: Exchange,
  limiter: AuthFailureLimiter,
): HookError | Promise<HookError> {
  const counted = limiter.recordFailure(x.limiterKey, x.arrivedAtMs);
  x.log['authFailure'] = 'verify_token';
  if (authFailed.hasSubscribers && !x.preview)
    authFailed.publish({ route: x.route?.name ?? '', failure: 'verify_token' });
  return counted ? counted.then(() => MISMATCH) : MISMATCH;
}

/** Slack's url_verification and ssl_check, once the request is verified and parsed. */
export function slackHandshake(x: Exchange): Answer | undefined {
  if (had(x.route, 'route').gate.scheme !== 'slack') return undefined;
  const payload = had(x.payload, 'payload');
  if (payload['type'] === 'url_verification') {
    const challenge = payload['challenge'];
    if (typeof challenge !== 'string' || !CHALLENGE.test(challenge)) {
      throw new HookError('invalid_payload', 'challenge: must be 1-256 printable characters.');
    }
    x.log['handshake'] = 'url_verification';
    return { kind: 'json', status: 200, body: JSON.stringify({ challenge }) };
  }
  if (payload['ssl_check'] === '1') {
    x.log['handshake'] = 'ssl_check';
    return { kind: 'json', status: 200, body: '{"ok":true}' };
  }
  return undefined;
}
