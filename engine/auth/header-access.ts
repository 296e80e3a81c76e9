/**
 * Reading the headers a signature scheme depends on. Each must occur exactly
 * once: a repeated signature, timestamp or id header is refused rather than
 * joined or picked from, because which copy an intermediary keeps is up to
 * whoever added the second one. Failures come back as values, never thrown.
 */
import type { AuthFailure, HeaderValues } from './verifier.ts';

/** Longest header value a verifier looks at; anything longer is malformed before any parsing. */
export const MAX_HEADER_VALUE = 4096;

/** A parse that failed, carrying the failure to report. */
export type Refusal = { readonly failure: AuthFailure };

/** One frozen refusal per failure, so parsers allocate nothing to say no. */
export const REFUSED: Readonly<Record<AuthFailure, Refusal>> = Object.freeze({
  missing: Object.freeze({ failure: 'missing' }),
  duplicate: Object.freeze({ failure: 'duplicate' }),
  malformed: Object.freeze({ failure: 'malformed' }),
  stale: Object.freeze({ failure: 'stale' }),
  mismatch: Object.freeze({ failure: 'mismatch' }),
});

/** True when a parse result is a refusal. */
export function isRefusal(value: object): value is Refusal {
  return 'failure' in value;
}

/** The one value of a header: missing when absent, duplicate when repeated, malformed when empty or oversized. */
export function singleHeader(headers: HeaderValues, name: string): { value: string } | Refusal {
  const values = headers(name);
  if (values.length === 0) return REFUSED.missing;
  if (values.length > 1) return REFUSED.duplicate;
  const value = values[0];
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_HEADER_VALUE) {
    return REFUSED.malformed;
  }
  return { value };
}

/** True when the header occurs at all (any number of times, even empty). */
export function hasHeader(headers: HeaderValues, name: string): boolean {
  return headers(name).length > 0;
}

/**
 * The bytes a header value stood for on the wire. Node decodes header bytes
 * as latin1, one char per byte, so latin1 gives them back exactly (UTF-8
 * would re-encode bytes above 0x7f as two and break the signature).
 */
export function headerBytes(value: string): Buffer {
  return Buffer.from(value, 'latin1');
}
