/**
 * Request headers as rules, templates and transforms see them: lower-cased
 * names, one string per header, and without credentials or signatures. The
 * rule is a denylist by pattern, so credential headers of senders we have
 * never heard of (`x-access-key`, `x-foo-token`) stay hidden too.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { TOKEN_HEADER } from './auth.ts';

const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  TOKEN_HEADER,
  'cookie',
  'set-cookie',
]);

// A name part (split on "-", "_" or ".") that names a credential: x-api-key, x-access-key,
// x-authorization, x-auth-token, x-session-id, x-shopify-hmac-sha256.
const SECRET_PART =
  /^(?:auth|authorization|authentication|bearer|cookie|credentials?|hmac|jwt|key|apikey|otp|passwd|password|secret|session|sig|signature|token)$/;

// Anywhere in the name, for run-together names: x-accesstoken, x-hubsignature, x-apikey.
const SECRET_SUBSTRING = /token|secret|passw|signature|credential|apikey|api_key|hmac/;

// A sender's own de-duplication key is not a credential; rules may want it.
const VISIBLE: ReadonlySet<string> = new Set(['idempotency-key', 'x-idempotency-key']);

/** True for headers that carry credentials or signatures (names are lower case). */
export function isSecretHeader(name: string): boolean {
  if (VISIBLE.has(name)) return false;
  if (SECRET_HEADERS.has(name) || SECRET_SUBSTRING.test(name)) return true;
  return name.split(/[-_.]/).some((part) => SECRET_PART.test(part));
}

/** A prototype-free copy of the headers without secrets; repeated headers joined with ", ". */
export function publicHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || isSecretHeader(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
