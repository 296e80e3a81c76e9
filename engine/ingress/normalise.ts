/**
 * The normalise stage: one envelope per request, what the replay check,
 * routes, rules and transforms read instead of the HTTP request.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Envelope, parseQuery } from '../envelope.ts';
import { type Exchange, had } from './exchange.ts';
import { isoTime } from '../iso-time.ts';

/** The headers stages after this one see: without the route's own signature header. */
function visibleHeaders(x: Exchange): IncomingHttpHeaders {
  const hidden = had(x.route, 'route').gate.hidden;
  if (hidden.length === 0) return x.source.headers;
  const headers: IncomingHttpHeaders = { ...x.source.headers };
  for (const name of hidden) delete headers[name];
  return headers;
}

/** Build the envelope from what the earlier stages found. */
export function normalise(x: Exchange): undefined {
  const envelope: Envelope = {
    id: x.id,
    receivedAt: isoTime(x.arrivedAtMs),
    client: x.client,
    method: x.source.method,
    path: x.pathname,
    hook: x.hook,
    headers: visibleHeaders(x),
    // A query holding the hook token (a signed request goes on as any other, admit.ts) is read
    // as none: a mapping's template or transform would put the token into what is stored.
    query: parseQuery(x.queryHoldsToken ? '' : x.query),
    raw: had(x.raw, 'raw'),
    payload: had(x.payload, 'payload'),
    verification: had(x.verification, 'verification'),
  };
  x.envelope = envelope;
  return undefined;
}
