/**
 * The normalise stage: one envelope per request, what the replay check,
 * routes, rules and transforms read instead of the HTTP request.
 */
import { type Envelope, parseQuery } from '../envelope.ts';
import { type Exchange, had } from './exchange.ts';

/** Build the envelope from what the earlier stages found. */
export function normalise(x: Exchange): undefined {
  const envelope: Envelope = {
    id: x.id,
    receivedAt: new Date(x.arrivedAtMs).toISOString(),
    client: x.client,
    method: x.source.method,
    path: x.pathname,
    hook: x.hook,
    headers: x.source.headers,
    query: parseQuery(x.query),
    raw: had(x.raw, 'raw'),
    payload: had(x.payload, 'payload'),
    verification: had(x.verification, 'verification'),
  };
  x.envelope = envelope;
  return undefined;
}
