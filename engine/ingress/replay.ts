/**
 * The replay check: before anything runs, find the request's keys (the
 * sender's delivery id, the signed content, or the caller's
 * Idempotency-Key), hold them until the request is answered, and answer a
 * known key with its first answer: no transform, no second action.
 */
import { createHash } from 'node:crypto';
import type { KeyClaim, Ledger } from '../dispatcher.ts';
import type { IdempotencyRecord } from '../queue/action-store.ts';
import { HookError } from '../errors.ts';
import { chooseIdempotencyKey, headerIdempotencyKey, requestFingerprint } from '../idempotency.ts';
import { type Envelope, withoutPayload } from '../envelope.ts';
import { parseAs } from './content-types.ts';
import { type Answer, type Exchange, had, type Stage } from './exchange.ts';

// Longer ids are kept as their hash (the key) and their first characters (what is shown).
const MAX_SHOWN_ID = 256;

/**
 * The keys of a request: its delivery id (per route), the signed content itself on signed
 * routes whose id is not signed (a captured GitHub delivery resent under a fresh
 * X-GitHub-Delivery is still a replay), and a caller's Idempotency-Key. Each kind has its own
 * namespace: a caller's key can never be spelled like a delivery's.
 */
export function keyClaims(x: Exchange): KeyClaim[] {
  const route = had(x.route, 'route');
  const envelope = had(x.envelope, 'envelope');
  const windowMs = route.keyWindowMs;
  const claims: KeyClaim[] = [];
  const found = route.deliveryId?.(envelope, x.headers);
  const delivery = found?.id;
  // Every kind of id (a header, a payload field, a mapping's template) comes through here: one
  // with a lone surrogate would be stored, or hashed, as U+FFFD, and `\ud800` and `\udc00`
  // would be one delivery, the second answered as a replay of the first and dropped.
  if (delivery !== undefined && !delivery.isWellFormed()) throw ILL_FORMED_ID;
  if (delivery !== undefined) {
    // Shown with the actions and to the agent: which delivery this was.
    envelope.verification = {
      ...envelope.verification,
      deliveryId: delivery.slice(0, MAX_SHOWN_ID),
    };
    x.log['deliveryId'] = delivery.slice(0, MAX_SHOWN_ID);
    // Scoped to the route: two senders may use the same ids.
    claims.push({ key: `delivery:${route.name}:${compact(delivery)}`, windowMs });
  }
  const signedRoute = envelope.verification.scheme !== 'token';
  // Unless a signed id stands for it, the signed content is a key: a replay may carry a fresh id.
  if (signedRoute && !found?.signed) {
    claims.push({ key: `signed:${route.name}:${contentDigest(envelope)}`, windowMs });
  }
  // A caller's key is for token routes: a provider's payload field is not a key it chose.
  if (delivery !== undefined || signedRoute) return claims;
  const key = chooseIdempotencyKey(
    headerIdempotencyKey(x.headers('idempotency-key')),
    envelope.payload,
  );
  if (key !== undefined) {
    claims.push({
      key: `caller:${key}`,
      fingerprint: requestFingerprint(
        envelope.hook,
        envelope.payload,
        route.readsQuery ? envelope.query : undefined,
      ),
      windowMs,
    });
  }
  return claims;
}

/** The signed bytes' digest: the raw body, and the signed timestamp where there is one. */
function contentDigest(envelope: Envelope): string {
  const hash = createHash('sha256');
  const timestamp = envelope.verification.timestamp;
  if (timestamp !== undefined) hash.update(`${timestamp}\n`);
  return hash.update(envelope.raw).digest('base64url');
}

const ILL_FORMED_ID = new HookError(
  'invalid_payload',
  'The delivery id must be well-formed text (it holds a lone surrogate, which the store cannot keep).',
);

function compact(id: string): string {
  if (id.length <= MAX_SHOWN_ID) return id;
  return `sha256:${createHash('sha256').update(id).digest('base64url')}`;
}

/** Build the replay-check stage over a ledger (`maxDepth`: the body's, for a parse again). */
export function createReplayCheck(ledger: Ledger, maxDepth: number): Stage {
  return function replayCheck(x: Exchange) {
    const claims = keyClaims(x);
    // Most token requests carry no key: they pass on without a promise.
    if (claims.length === 0) return undefined;
    x.claims = claims;
    const waiter = { bytes: had(x.raw, 'raw').length, waits: () => setPayloadAside(x) };
    return ledger.hold(claims, waiter).then((held) => {
      x.cleanup.push(held.release);
      if (held.previous) return replayAnswer(x, claims, held.previous);
      if (x.payload === undefined) parseAgain(x, maxDepth);
      return undefined;
    });
  };
}

/**
 * A copy waiting for the request that holds its key keeps its raw bytes, not their parsed
 * tree (a 255 KB body of `{}` parses to ~85,000 objects, ~70 times its size): the wait may
 * last seconds, and copies behind it cost their sender nothing but their bytes.
 */
function setPayloadAside(x: Exchange): void {
  x.payload = undefined;
  x.envelope = withoutPayload(had(x.envelope, 'envelope'));
}

/** The waited-for request stored nothing: this copy goes on, with its body parsed again. */
function parseAgain(x: Exchange, maxDepth: number): void {
  const payload = parseAs(had(x.raw, 'raw'), had(x.format, 'format'), maxDepth);
  x.payload = payload;
  x.envelope = { ...had(x.envelope, 'envelope'), payload };
}

/**
 * The answer to a request whose key an earlier request holds: that request's first answer, or a
 * conflict when a caller reused its key for a different request.
 */
export function replayAnswer(
  x: Exchange,
  claims: readonly KeyClaim[],
  previous: IdempotencyRecord,
): Answer {
  const caller = claims.find((claim) => claim.fingerprint !== undefined);
  if (caller && previous.fingerprint !== '' && previous.fingerprint !== caller.fingerprint) {
    throw new HookError('idempotency_conflict');
  }
  x.log['replayed'] = true;
  return { kind: 'json', status: 200, body: previous.response, replayed: true };
}
