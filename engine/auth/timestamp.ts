/**
 * Signed timestamps: canonical integer seconds, within a tolerance of now in
 * both directions. Canonical means one spelling per instant (no sign,
 * decimals, leading zeros or milliseconds), so the string that was signed
 * and the number that was checked can never disagree.
 */
import { REFUSED, type Refusal } from './header-access.ts';

/** How far a signed timestamp may lie from now when the config says nothing. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

// At most 11 digits: up to the year 5138, and milliseconds (13 digits) are refused as such.
const CANONICAL_SECONDS = /^(?:0|[1-9][0-9]{0,10})$/;

/** Unix seconds from their canonical decimal spelling, or undefined. */
export function parseSeconds(text: string): number | undefined {
  return CANONICAL_SECONDS.test(text) ? Number(text) : undefined;
}

/** A timestamp that passed the window, and its distance from now (positive: in the past). */
export type InWindow = { timestamp: number; skewSeconds: number };

/** Parse a timestamp header value and check it lies within ± tolerance of now. */
export function checkWindow(
  text: string,
  nowSeconds: number,
  toleranceSeconds: number,
): InWindow | Refusal {
  const timestamp = parseSeconds(text);
  if (timestamp === undefined) return REFUSED.malformed;
  const skewSeconds = Math.floor(nowSeconds) - timestamp;
  // Both directions: a future timestamp would otherwise extend a captured request's life.
  if (!(Math.abs(skewSeconds) <= toleranceSeconds)) return REFUSED.stale;
  return { timestamp, skewSeconds };
}
