/**
 * Answered requests as the HTTP handler publishes them on `requestFinished`, built without a
 * server: for feeding the console's journal and live feed directly.
 */
import { type Exchange, newExchange } from '../../engine/ingress/exchange.ts';
import type { RequestFinished } from '../../engine/observe/events.ts';

/** A POST to `url` with `headers`, and the fields the stages would have set on it. */
export function answeredExchange(
  url: string,
  fields: Partial<Exchange> = {},
  headers: Record<string, string> = {},
): Exchange {
  const exchange = newExchange(
    {
      method: 'POST',
      url,
      headers,
      rawHeaders: [],
      remoteAddress: '127.0.0.1',
      readBody: () => Promise.resolve(Buffer.alloc(0)),
    },
    () => [],
  );
  return Object.assign(exchange, { client: '127.0.0.1', ...fields });
}

/** A 401 answered before its caller was authenticated. */
export function refused(exchange: Exchange): RequestFinished {
  return {
    exchange,
    status: 401,
    code: 'unauthorized',
    authenticated: false,
    durationMs: 1,
    replayed: false,
  };
}
