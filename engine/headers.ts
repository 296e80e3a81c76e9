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
// x-authorization, x-auth-token, x-session-id, x-shopify-hmac-sha256, x-authz, x-pwd.
// Matched where the part starts (the name's start or a separator) and ends, in one pass over the
// name: no split array per header per request.
const SECRET_PART =
  /(?:^|[-_.])(?:auth|authn|authz|authorization|authentication|bearer|cookie|cred|creds|credentials?|hmac|jwt|keys?|apikey|otp|totp|mfa|2fa|pin|pass|passcode|passphrase|passwd|pwd|password|pat|psk|sas|secret|session|sessionid|sid|sig|signature|token|oauth2?)(?=$|[-_.])/;

// Anywhere in the name, for run-together names: x-accesstoken, x-hubsignature, x-apikey,
// x-authorisation, x-sessionid; and a part ending in "key" (x-accesskey, x-privatekey).
const SECRET_SUBSTRING =
  /token|secret|passw|passphrase|passcode|signature|credential|apikey|api_key|hmac|authori[sz]|authcode|sessionid|oauth|key(?:s)?(?=$|[-_.])/;

// A sender's own de-duplication key is not a credential; rules may want it.
const VISIBLE: ReadonlySet<string> = new Set(['idempotency-key', 'x-idempotency-key']);

/** True for headers that carry credentials or signatures (names are lower case). */
export function isSecretHeader(name: string): boolean {
  if (VISIBLE.has(name)) return false;
  return SECRET_HEADERS.has(name) || SECRET_SUBSTRING.test(name) || SECRET_PART.test(name);
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
