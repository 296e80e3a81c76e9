/**
 * Keys for Standard Webhooks (and Svix), decoded once at boot. A `whsec_`
 * secret (or its bare base64) is an HMAC key: the base64-decoded bytes, not
 * the text. A `whpk_` key is the sender's Ed25519 public key for `v1a`
 * signatures. A `whsk_` key is a signing key and does not belong on the
 * receiving side at all.
 */
import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import { decodeBase64Key } from './strict-decode.ts';

/** A decoded key: what each presented signature version is checked with. */
export type StandardWebhooksKey =
  | { kind: 'hmac'; key: KeyObject }
  | { kind: 'ed25519'; key: KeyObject };

// Below this a "key" is almost certainly a password typed where a generated secret belongs.
const MIN_HMAC_KEY_BYTES = 16;
const ED25519_PUBLIC_KEY_BYTES = 32;

/** Decode a configured key, or say in one sentence why it is not one. */
export function decodeStandardWebhooksKey(secret: string): StandardWebhooksKey | string {
  if (secret.startsWith('whsk_')) {
    return "a whsk_ key is the sender's private signing key; configure its whpk_ public key";
  }
  if (secret.startsWith('whpk_')) return decodePublicKey(secret.slice(5));
  const text = secret.startsWith('whsec_') ? secret.slice(6) : secret;
  const key = decodeBase64Key(text);
  if (key === undefined) return 'not a whsec_ secret: expected base64 after whsec_';
  if (key.length < MIN_HMAC_KEY_BYTES) {
    return `a whsec_ secret decodes to at least ${MIN_HMAC_KEY_BYTES} bytes; this one is ${key.length}`;
  }
  return { kind: 'hmac', key: createSecretKey(key) };
}

function decodePublicKey(text: string): StandardWebhooksKey | string {
  const raw = decodeBase64Key(text);
  if (raw === undefined || raw.length !== ED25519_PUBLIC_KEY_BYTES) {
    return 'not a whpk_ key: expected the base64 of a 32-byte Ed25519 public key after whpk_';
  }
  try {
    const jwk = { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') };
    return { kind: 'ed25519', key: createPublicKey({ key: jwk, format: 'jwk' }) };
  } catch {
    return 'not a whpk_ key: not a valid Ed25519 public key';
  }
}
