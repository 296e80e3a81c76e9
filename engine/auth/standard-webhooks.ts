/**
 * Standard Webhooks (and Svix): `webhook-id`, `webhook-timestamp` and
 * `webhook-signature` (Svix: the same under `svix-*`), signing
 * `<id>.<timestamp>.<raw body>`. The signature header lists space-separated
 * `v1,<base64 HMAC-SHA256>` and `v1a,<base64 Ed25519>` entries; unknown
 * versions are skipped and any entry may match any configured key.
 *
 * One family per request. When both families are present each of the three
 * headers must be present in both with the same value; anything else is
 * malformed, so the id or timestamp a later stage reads can never come from
 * a header the signature did not cover.
 */
import { type KeyObject, verify as verifySignature } from 'node:crypto';
import { hmacOf, matchesAny } from './digest-compare.ts';
import {
  hasHeader,
  headerBytes,
  isRefusal,
  REFUSED,
  type Refusal,
  singleHeader,
} from './header-access.ts';
import type { StandardWebhooksKey } from './standard-webhooks-keys.ts';
import { decodeBase64 } from './strict-decode.ts';
import { checkWindow, type InWindow } from './timestamp.ts';
import type { AuthFailure, HeaderValues, Verifier } from './verifier.ts';

/** Most signature entries (any version) one header may list: each costs a check per key. */
export const MAX_STANDARD_WEBHOOKS_ENTRIES = 8;

/** Most Ed25519 verifications one request may cause (v1a entries x configured public keys). */
export const MAX_ED25519_CHECKS = 8;

// Visible ASCII without "." (the separator of the signed content), bounded.
const MESSAGE_ID = /^[\x21-\x2d\x2f-\x7e]{1,256}$/;

type Family = { id: string; stamp: string; signature: string };
type Signatures = { hmac: Buffer[]; ed25519: Buffer[] };
type Parsed = InWindow & { id: string; stamp: string } & Signatures;

function readFamily(headers: HeaderValues, prefix: string): Family | Refusal {
  const id = singleHeader(headers, `${prefix}-id`);
  if (isRefusal(id)) return id;
  const stamp = singleHeader(headers, `${prefix}-timestamp`);
  if (isRefusal(stamp)) return stamp;
  const signature = singleHeader(headers, `${prefix}-signature`);
  if (isRefusal(signature)) return signature;
  return { id: id.value, stamp: stamp.value, signature: signature.value };
}

function present(headers: HeaderValues, prefix: string): boolean {
  return ['id', 'timestamp', 'signature'].some((part) => hasHeader(headers, `${prefix}-${part}`));
}

/** The request's one family of headers; both families only when they agree exactly. */
function chooseFamily(headers: HeaderValues): Family | Refusal {
  const standard = present(headers, 'webhook');
  const svix = present(headers, 'svix');
  if (!standard && !svix) return REFUSED.missing;
  if (standard !== svix) return readFamily(headers, standard ? 'webhook' : 'svix');
  const a = readFamily(headers, 'webhook');
  if (isRefusal(a)) return a.failure === 'missing' ? REFUSED.malformed : a;
  const b = readFamily(headers, 'svix');
  if (isRefusal(b)) return b.failure === 'missing' ? REFUSED.malformed : b;
  const same = a.id === b.id && a.stamp === b.stamp && a.signature === b.signature;
  return same ? a : REFUSED.malformed;
}

/** The entries of a signature header, decoded strictly; unknown versions skipped. */
function parseSignatures(value: string): Signatures | Refusal {
  const entries = value.split(' ', MAX_STANDARD_WEBHOOKS_ENTRIES + 1);
  if (entries.length > MAX_STANDARD_WEBHOOKS_ENTRIES) return REFUSED.malformed;
  const found: Signatures = { hmac: [], ed25519: [] };
  for (const entry of entries) {
    const comma = entry.indexOf(',');
    if (comma <= 0) return REFUSED.malformed;
    const version = entry.slice(0, comma);
    const text = entry.slice(comma + 1);
    if (version === 'v1' || version === 'v1a') {
      const signature = decodeBase64(text, version === 'v1' ? 32 : 64);
      if (signature === undefined) return REFUSED.malformed;
      (version === 'v1' ? found.hmac : found.ed25519).push(signature);
    }
  }
  if (found.hmac.length + found.ed25519.length === 0) return REFUSED.malformed;
  return found;
}

function parseHeaders(
  headers: HeaderValues,
  nowSeconds: number,
  tolerance: number,
): Parsed | Refusal {
  const family = chooseFamily(headers);
  if (isRefusal(family)) return family;
  if (!MESSAGE_ID.test(family.id)) return REFUSED.malformed;
  const signatures = parseSignatures(family.signature);
  if (isRefusal(signatures)) return signatures;
  // The canonical form has no "." either, so the signed content splits one way only.
  const window = checkWindow(family.stamp, nowSeconds, tolerance);
  if (isRefusal(window)) return window;
  return { ...window, ...signatures, id: family.id, stamp: family.stamp };
}

function asBuffer(part: Buffer | string): Buffer {
  return typeof part === 'string' ? Buffer.from(part, 'utf8') : part;
}

function ed25519Matches(key: KeyObject, content: Buffer, signatures: readonly Buffer[]): boolean {
  let matched = false;
  for (const signature of signatures) {
    try {
      if (verifySignature(null, content, key, signature)) matched = true;
    } catch {
      // A signature the library cannot even parse is simply not a match.
    }
  }
  return matched;
}

function matchingKey(keys: readonly StandardWebhooksKey[], parsed: Parsed, raw: Buffer): number {
  const parts = [headerBytes(parsed.id), '.', headerBytes(parsed.stamp), '.', raw];
  let whole: Buffer | undefined;
  let found = -1;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as StandardWebhooksKey;
    let matched: boolean;
    if (key.kind === 'hmac') {
      matched = matchesAny(hmacOf('sha256', key.key, parts), parsed.hmac);
    } else {
      // Ed25519 needs the content in one piece; build it once, and only when there is a v1a entry.
      whole ??= parsed.ed25519.length > 0 ? Buffer.concat(parts.map(asBuffer)) : undefined;
      matched = whole !== undefined && ed25519Matches(key.key, whole, parsed.ed25519);
    }
    if (matched && found < 0) found = i;
  }
  return found;
}

/** A verifier for Standard Webhooks / Svix deliveries; keys come decoded from the boot step. */
export function createStandardWebhooksVerifier(
  keys: readonly StandardWebhooksKey[],
  toleranceSeconds: number,
): Verifier {
  const publicKeys = keys.filter((key) => key.kind === 'ed25519').length;
  // Each Ed25519 check hashes the whole body: entries x public keys is bounded, not just entries.
  const tooMany = (parsed: Parsed) => parsed.ed25519.length * publicKeys > MAX_ED25519_CHECKS;
  return {
    scheme: 'standard-webhooks',
    precheck(headers, nowSeconds): AuthFailure | undefined {
      const parsed = parseHeaders(headers, nowSeconds, toleranceSeconds);
      if (isRefusal(parsed)) return parsed.failure;
      return tooMany(parsed) ? 'malformed' : undefined;
    },
    verify(headers, raw, nowSeconds) {
      const parsed = parseHeaders(headers, nowSeconds, toleranceSeconds);
      if (isRefusal(parsed)) return parsed.failure;
      if (tooMany(parsed)) return 'malformed';
      const secretIndex = matchingKey(keys, parsed, raw);
      if (secretIndex < 0) return 'mismatch';
      const { timestamp, skewSeconds } = parsed;
      return { scheme: 'standard-webhooks', secretIndex, timestamp, skewSeconds };
    },
  };
}
