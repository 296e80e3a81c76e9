/**
 * Idempotency keys: where a key comes from, and the fingerprint that tells a
 * repeat of the same request from a different request reusing the key.
 */
import { createHash } from 'node:crypto';
import { HookError } from './errors.ts';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 256;

/**
 * The Idempotency-Key header from its every occurrence. Sent twice it is refused: Node would
 * join the copies into one key that neither copy is, and a proxy may keep either.
 */
export function headerIdempotencyKey(values: readonly string[]): string | undefined {
  if (values.length === 0) return undefined;
  if (values.length > 1)
    throw new HookError('invalid_payload', 'Idempotency-Key: sent more than once.');
  return checkedKey(values[0], 'Idempotency-Key');
}

/**
 * The same rule for every carrier (a header, a built-in body or a mapped hook's body): 1-256
 * characters, not only white space (a header's value is trimmed, so a blank one is empty), and
 * no lone surrogate (a JSON body can carry `\ud800`): one has no UTF-8 form, so the store would
 * keep it as U+FFFD, and `\ud800` and `\udc00` would be one key.
 */
function checkedKey(value: unknown, where: string): string {
  if (
    typeof value !== 'string' ||
    value.trim().length === 0 ||
    value.length > MAX_IDEMPOTENCY_KEY_LENGTH
  ) {
    throw new HookError(
      'invalid_payload',
      `${where}: must be 1-${MAX_IDEMPOTENCY_KEY_LENGTH} characters, not only white space.`,
    );
  }
  if (!value.isWellFormed()) {
    throw new HookError(
      'invalid_payload',
      `${where}: must be well-formed text (it holds a lone surrogate, which the store cannot keep).`,
    );
  }
  return value;
}

/** Pick the key from the header or the body's `idempotencyKey`; both must agree when both are given. */
export function chooseIdempotencyKey(
  fromHeader: string | undefined,
  payload: Record<string, unknown>,
): string | undefined {
  if (!Object.hasOwn(payload, 'idempotencyKey')) return fromHeader;
  const fromBody = checkedKey(payload['idempotencyKey'], 'idempotencyKey');
  if (fromHeader !== undefined && fromHeader !== fromBody) {
    throw new HookError(
      'invalid_payload',
      'idempotencyKey: differs from the Idempotency-Key header.',
    );
  }
  return fromBody;
}

/**
 * Fingerprint of a request: the hook and its payload in canonical JSON, without the key itself,
 * and the query its mappings read (`query` is given on mapped routes only: /wake and /agent read
 * none). A retry resends its URL, so `?env=production` after `?env=staging` under one key is
 * another request (409), not a replay of the first. Headers are left out: a retry's trace ids and
 * timestamps differ. An empty query adds nothing, so such keys match the ones stored before.
 */
export function requestFingerprint(
  hook: string,
  payload: Record<string, unknown>,
  query?: Record<string, string>,
): string {
  const { idempotencyKey: _ignored, ...rest } = payload;
  const hash = createHash('sha256').update(hook).update('\n').update(canonicalJson(rest));
  // Canonical JSON holds no raw line break: the two parts cannot run into each other.
  if (query !== undefined && Object.keys(query).length > 0) {
    hash.update('\nquery\n').update(canonicalJson(query));
  }
  return hash.digest('base64url');
}

/**
 * JSON with object keys sorted, so key order does not change the fingerprint. A number too
 * large for a double (`1e400`) parses to ±Infinity, which JSON.stringify writes as `null`: such
 * numbers are written bare instead (`Infinity`, `-Infinity`), which no JSON value can be, so
 * `1e400`, `-1e400` and `null` are three payloads (a template renders them differently).
 */
export function canonicalJson(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    const parts = keys.map(
      (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
    );
    return `{${parts.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
