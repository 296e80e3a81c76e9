/**
 * What each authentication scheme is, as data: one row per scheme. Whether
 * it signs a timestamp (then `toleranceSeconds` applies), where the sender's
 * delivery id travels, and whether the signature covers that id (if not, a
 * replay can carry a fresh id, and the signed content itself must be a key).
 */
import type { AuthScheme, RouteAuth } from '../../schemas/auth.ts';

/** Where a scheme's delivery id is: header names (first present wins) or a top-level payload field. */
export type IdCarrier = { headers: readonly string[] } | { payload: string };

export type SchemeFacts = {
  /** A signed timestamp, checked against toleranceSeconds in both directions. */
  timed: boolean;
  /** The sender's own delivery id. */
  deliveryId?: IdCarrier;
  /** The signature covers the delivery id: a byte-identical body may be another delivery. */
  idSigned: boolean;
};

export const SCHEMES: Readonly<Record<AuthScheme, SchemeFacts>> = Object.freeze({
  token: { timed: false, idSigned: false },
  // X-GitHub-Delivery is a plain header beside a signature over the body alone.
  github: { timed: false, deliveryId: { headers: ['x-github-delivery'] }, idSigned: false },
  // The event id is inside the signed body.
  stripe: { timed: true, deliveryId: { payload: 'id' }, idSigned: true },
  // event_id is inside the signed body (Events API); commands and interactions have none.
  slack: { timed: true, deliveryId: { payload: 'event_id' }, idSigned: true },
  // webhook-id is part of the signed content.
  'standard-webhooks': {
    timed: true,
    deliveryId: { headers: ['webhook-id', 'svix-id'] },
    idSigned: true,
  },
  hmac: { timed: false, idSigned: false },
});

/** True when the route's requests carry a signed timestamp (hmac: with a timestampHeader). */
export function isTimed(auth: RouteAuth): boolean {
  return (
    SCHEMES[auth.scheme].timed || (auth.scheme === 'hmac' && auth.timestampHeader !== undefined)
  );
}
