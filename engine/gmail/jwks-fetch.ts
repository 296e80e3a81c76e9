/**
 * The fetch jose uses to load the push tokens' signing keys. jose's own
 * fetch bounds the time but reads any amount of body; this one goes through
 * the shared outbound client, so the key set's answer is bounded in time and
 * in bytes, never follows a redirect, and must be a JSON key set of a few
 * keys. The key endpoint's answers are treated as hostile: anything else is
 * thrown, and the authenticator reports it as keys_unavailable.
 */
import type { FetchImplementation } from 'jose';
import { outboundCall } from '../outbound/http-client.ts';
import { parseForeignJson } from '../foreign-json.ts';

/** Most bytes of key set read (Google's is about 2 KiB). */
export const MAX_KEY_SET_BYTES = 64 * 1024;

/** Most keys in a set (Google publishes two or three); bounds the verifications per token. */
export const MAX_KEY_SET_KEYS = 16;

// The key set could not be loaded; `cause` names what went wrong, never a key.
class KeysUnavailable extends Error {
  constructor(cause: string) {
    super(`signing keys unavailable: ${cause}`);
    this.name = 'KeysUnavailable';
  }
}

/** Bounds of one key set fetch. */
export type KeySetFetchLimits = { timeoutMs: number; maxBytes: number };

/** A jose-compatible fetch that reads at most `maxBytes` within `timeoutMs`. */
export function createKeySetFetch(limits: KeySetFetchLimits): FetchImplementation {
  return async function fetchKeySet(url, options) {
    const result = await outboundCall(url, {
      method: 'GET',
      headers: { accept: 'application/json, application/jwk-set+json' },
      timeoutMs: limits.timeoutMs,
      signal: options.signal,
      maxBytes: limits.maxBytes,
    });
    if (result.kind !== 'answer') throw new KeysUnavailable(result.kind);
    if (result.status !== 200) throw new KeysUnavailable(`status ${result.status}`);
    checkKeySet(result.text);
    return new Response(result.text, {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };
}

// jose validates each key itself; this bounds how many it will hold and try.
function checkKeySet(text: string): void {
  let parsed: unknown;
  try {
    parsed = parseForeignJson(text);
  } catch {
    throw new KeysUnavailable('not JSON');
  }
  const keys =
    typeof parsed === 'object' && parsed !== null && Object.hasOwn(parsed, 'keys')
      ? (parsed as { keys: unknown }).keys
      : undefined;
  if (!Array.isArray(keys)) throw new KeysUnavailable('not a key set');
  // An empty set would turn every push into a "bad signature"; it is the endpoint's fault.
  if (keys.length === 0) throw new KeysUnavailable('no keys');
  if (keys.length > MAX_KEY_SET_KEYS) throw new KeysUnavailable('too many keys');
}
