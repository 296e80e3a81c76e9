/**
 * The envelope: one normalised value per request, what every later stage
 * (routes, rules, transforms) reads instead of the raw HTTP request.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Action } from '../schemas/action.ts';

/** How the request was authenticated (stored on its actions as their provenance). */
export type Verification = NonNullable<Action['verification']>;

export type Envelope = {
  /** Request id, also sent as x-request-id. */
  id: string;
  receivedAt: string;
  client: string;
  method: string;
  /** Full path without the query string. */
  path: string;
  /** The `<name>` in `POST <hooks_path>/<name>`. */
  hook: string;
  /** Lower-cased header names (Node's own normalisation). */
  headers: IncomingHttpHeaders;
  query: Record<string, string>;
  raw: Buffer;
  payload: Record<string, unknown>;
  verification: Verification;
};

const NO_PAYLOAD: Record<string, unknown> = Object.freeze(Object.create(null));

/**
 * The envelope without its parsed body (an empty object in its place), for what runs after a
 * step that waits: only the request's facts (id, hook, times, verification) are read then.
 */
export function withoutPayload(envelope: Envelope): Envelope {
  return { ...envelope, payload: NO_PAYLOAD };
}

/** Parse a query string into a prototype-free record (last value wins). */
export function parseQuery(query: string): Record<string, string> {
  return readQuery(query).params;
}

/** A query string as a prototype-free record (last value wins), and the first name it repeats. */
export function readQuery(query: string): {
  params: Record<string, string>;
  repeated: string | undefined;
} {
  const params: Record<string, string> = Object.create(null);
  let repeated: string | undefined;
  if (!query) return { params, repeated };
  for (const [key, value] of new URLSearchParams(query)) {
    if (repeated === undefined && Object.hasOwn(params, key)) repeated = key;
    params[key] = value;
  }
  return { params, repeated };
}
