/**
 * Stripe's signature: `Stripe-Signature: t=<seconds>,v1=<hex>[,v1=<hex>...]`
 * over `<t>.<raw body>`, HMAC-SHA256 keyed with the whole `whsec_...` string
 * (its UTF-8 bytes, not decoded). Only `v1` counts; `v0` (test mode, made
 * with a key nobody has) and unknown schemes are skipped, so a request with
 * no `v1` is refused. While a secret is rolled Stripe sends one `v1` per
 * live secret: any of them against any configured secret verifies.
 */
import { createMacVerifier } from './mac-verifier.ts';
import { isRefusal, REFUSED, type Refusal, singleHeader } from './header-access.ts';
import { decodeHex } from './strict-decode.ts';
import { checkWindow, type InWindow } from './timestamp.ts';
import type { HeaderValues, Verifier } from './verifier.ts';

/** The header Stripe signs with (lower case). */
export const STRIPE_SIGNATURE_HEADER = 'stripe-signature';

/** Most `v1` entries one header may carry: each costs a comparison per secret. */
export const MAX_STRIPE_SIGNATURES = 8;

// All items, any scheme: a bound on the parsing work whatever the header holds.
const MAX_ITEMS = 16;

type StripeHeader = InWindow & { stamp: string; signatures: Buffer[] };

/** Split the header into its timestamp and v1 digests; the first failure wins. */
function parseItems(value: string): { stamp: string; signatures: Buffer[] } | Refusal {
  const items = value.split(',', MAX_ITEMS + 1);
  if (items.length > MAX_ITEMS) return REFUSED.malformed;
  let stamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) return REFUSED.malformed;
    const key = item.slice(0, eq);
    const text = item.slice(eq + 1);
    if (key === 't') {
      // A second t would let the signed and the checked timestamp differ.
      if (stamp !== undefined) return REFUSED.malformed;
      stamp = text;
    } else if (key === 'v1') {
      const digest = decodeHex(text, 32);
      if (digest === undefined || signatures.length === MAX_STRIPE_SIGNATURES) {
        return REFUSED.malformed;
      }
      signatures.push(digest);
    }
  }
  if (stamp === undefined || signatures.length === 0) return REFUSED.malformed;
  return { stamp, signatures };
}

function parseHeader(
  headers: HeaderValues,
  nowSeconds: number,
  toleranceSeconds: number,
): StripeHeader | Refusal {
  const header = singleHeader(headers, STRIPE_SIGNATURE_HEADER);
  if (isRefusal(header)) return header;
  const items = parseItems(header.value);
  if (isRefusal(items)) return items;
  const window = checkWindow(items.stamp, nowSeconds, toleranceSeconds);
  if (isRefusal(window)) return window;
  return { ...items, ...window };
}

/** A verifier for Stripe deliveries; secrets are `whsec_` strings, used verbatim. */
export function createStripeVerifier(
  secrets: readonly string[],
  toleranceSeconds: number,
): Verifier {
  return createMacVerifier(secrets, {
    scheme: 'stripe',
    algorithm: 'sha256',
    parse(headers, nowSeconds) {
      const parsed = parseHeader(headers, nowSeconds, toleranceSeconds);
      if (isRefusal(parsed)) return parsed;
      const { timestamp, skewSeconds } = parsed;
      return { ...parsed, window: { timestamp, skewSeconds } };
    },
    content: (parsed, _headers, raw) => [`${parsed.stamp}.`, raw],
  });
}
