/**
 * The replay check: before anything runs, find the request's key (the
 * sender's delivery id on routes that have one, else the caller's
 * Idempotency-Key), hold it until the request is answered, and answer a
 * known key with its first answer: no transform, no second action.
 */
import { createHash } from 'node:crypto';
import type { KeyClaim, Ledger } from '../dispatcher.ts';
import { HookError } from '../errors.ts';
import { chooseIdempotencyKey, headerIdempotencyKey, requestFingerprint } from '../idempotency.ts';
import { type Exchange, had, type Stage } from './exchange.ts';

// Longer ids are kept as their hash (the key) and their first characters (what is shown).
const MAX_SHOWN_ID = 256;

/** The key of a request, if it has one. */
export function keyClaim(x: Exchange): KeyClaim | undefined {
  const route = had(x.route, 'route');
  const envelope = had(x.envelope, 'envelope');
  const delivery = route.deliveryId?.(envelope, x.headers);
  if (delivery !== undefined) {
    // Shown with the actions and to the agent: which delivery this was.
    envelope.verification = {
      ...envelope.verification,
      deliveryId: delivery.slice(0, MAX_SHOWN_ID),
    };
    x.log['deliveryId'] = delivery.slice(0, MAX_SHOWN_ID);
    // Scoped to the route: two senders may use the same ids.
    return { key: `delivery:${route.name}:${compact(delivery)}`, windowMs: route.keyWindowMs };
  }
  const key = chooseIdempotencyKey(headerIdempotencyKey(x.source.headers), envelope.payload);
  if (key === undefined) return undefined;
  return {
    key,
    fingerprint: requestFingerprint(envelope.hook, envelope.payload),
    windowMs: route.keyWindowMs,
  };
}

function compact(id: string): string {
  if (id.length <= MAX_SHOWN_ID) return id;
  return `sha256:${createHash('sha256').update(id).digest('base64url')}`;
}

/** Build the replay-check stage over a ledger. */
export function createReplayCheck(ledger: Ledger): Stage {
  return async function replayCheck(x: Exchange) {
    const claim = keyClaim(x);
    if (!claim) return undefined;
    x.claim = claim;
    const held = await ledger.hold(claim);
    x.cleanup.push(held.release);
    const previous = held.previous;
    if (!previous) return undefined;
    if (claim.fingerprint !== undefined && previous.fingerprint !== claim.fingerprint) {
      throw new HookError('idempotency_conflict');
    }
    x.log['replayed'] = true;
    return { kind: 'json', status: 200, body: previous.response, replayed: true };
  };
}
