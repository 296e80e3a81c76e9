/**
 * The OIDC check of a Pub/Sub push: `Authorization: Bearer <JWT>` signed by
 * Google with RS256, a key from the configured key set (cached by jose,
 * refetched on an unknown key id at most once per cooldown), the issuer in
 * the configured list, the audience and service-account email the
 * subscription was given, and a verified email. Every outcome is data: the
 * token and the claims of a refused token are never returned or logged.
 */
import {
  createRemoteJWKSet,
  customFetch,
  errors,
  type FlattenedJWSInput,
  type JWTHeaderParameters,
  type JWTPayload,
  jwtVerify,
} from 'jose';
import { createKeySetFetch, MAX_KEY_SET_BYTES } from './jwks-fetch.ts';

/** Longest accepted token (Google's are about 1 KiB); checked before any parsing. */
export const MAX_TOKEN_CHARS = 4096;

/** What the OIDC check needs from `hooks.gmail.push`, required keys present. */
export type OidcSettings = {
  audience: string;
  serviceAccountEmail: string;
  jwksUrl: string;
  issuers: readonly string[];
};

/** Tunables of the OIDC check; the defaults suit production. */
export type OidcOptions = {
  /** Bound on one key set fetch, body included (default 3000; a push waits at most 10 s). */
  keysTimeoutMs?: number;
  /** Least time between two fetches caused by unknown key ids (default 30000). */
  keysCooldownMs?: number;
  /** How long fetched keys are used before they are fetched again (default 600000). */
  keysMaxAgeMs?: number;
  /** Most bytes of key set read (default MAX_KEY_SET_BYTES). */
  maxKeySetBytes?: number;
  /** Leeway on exp, nbf and iat for clock skew (default 30). */
  clockToleranceSeconds?: number;
  /** The current time in ms (default Date.now). */
  now?: () => number;
};

/** Why a bearer token was refused. */
export type OidcFailure =
  | 'missing'
  | 'malformed'
  | 'signature'
  | 'issuer'
  | 'audience'
  | 'email'
  | 'unverified_email'
  | 'expired'
  | 'not_yet_valid'
  | 'keys_unavailable';

/** The checked claims of an accepted token. */
export type OidcIdentity = {
  mode: 'oidc';
  issuer: string;
  audience: string;
  email: string;
  /** The service account's numeric id, when the token carries one. */
  subject?: string;
  keyId: string;
  /** Unix seconds. */
  issuedAt: number;
  expiresAt: number;
};

/** The outcome of one OIDC check. */
export type OidcResult = { ok: true; identity: OidcIdentity } | { ok: false; reason: OidcFailure };

const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/i;
const MAX_KEY_ID_CHARS = 256;

// A refusal decided by our own code inside jose's flow (the key lookup).
class Refused extends Error {
  readonly reason: OidcFailure;
  constructor(reason: OidcFailure) {
    super(reason);
    this.reason = reason;
  }
}

/** The token of an `Authorization: Bearer` value, or why there is none. */
export function bearerToken(
  authorization: string | undefined,
): { ok: true; token: string } | { ok: false; reason: 'missing' | 'malformed' } {
  if (authorization === undefined || authorization === '') return { ok: false, reason: 'missing' };
  // Length first: nothing longer is matched, decoded or parsed.
  if (authorization.length > MAX_TOKEN_CHARS + 16) return { ok: false, reason: 'malformed' };
  const token = BEARER.exec(authorization)?.[1];
  return token === undefined || token.length > MAX_TOKEN_CHARS
    ? { ok: false, reason: 'malformed' }
    : { ok: true, token };
}

/** A check of bearer tokens against the settings; the key set is fetched lazily. */
export function createOidcCheck(settings: OidcSettings, options: OidcOptions = {}) {
  const now = options.now ?? Date.now;
  const tolerance = options.clockToleranceSeconds ?? 30;
  const keyFor = createKeyLookup(settings.jwksUrl, options);

  return async function checkBearer(authorization: string | undefined): Promise<OidcResult> {
    const bearer = bearerToken(authorization);
    if (!bearer.ok) return bearer;
    const nowMs = now();
    try {
      const { payload, protectedHeader } = await jwtVerify(bearer.token, keyFor, {
        algorithms: ['RS256'],
        issuer: [...settings.issuers],
        audience: settings.audience,
        requiredClaims: ['exp', 'iat'],
        clockTolerance: tolerance,
        currentDate: new Date(nowMs),
      });
      const latestIssue = nowMs / 1000 + tolerance;
      return checkIdentity(payload, protectedHeader.kid as string, settings, latestIssue);
    } catch (err) {
      return { ok: false, reason: failureOf(err) };
    }
  };
}

// The key for a token's header, from the remote set jose caches and refetches.
function createKeyLookup(jwksUrl: string, options: OidcOptions) {
  const timeoutMs = options.keysTimeoutMs ?? 3000;
  const remote = createRemoteJWKSet(new URL(jwksUrl), {
    timeoutDuration: timeoutMs,
    cooldownDuration: options.keysCooldownMs ?? 30_000,
    cacheMaxAge: options.keysMaxAgeMs ?? 600_000,
    [customFetch]: createKeySetFetch({
      timeoutMs,
      maxBytes: options.maxKeySetBytes ?? MAX_KEY_SET_BYTES,
    }),
  });
  // Called by jose after the algorithm was allowed, before the signature is checked.
  return async function keyFor(header: JWTHeaderParameters, token: FlattenedJWSInput) {
    // Google always names the key; without a kid every key would have to be tried.
    const kid = header.kid;
    if (typeof kid !== 'string' || kid === '' || kid.length > MAX_KEY_ID_CHARS) {
      throw new Refused('malformed');
    }
    try {
      return await remote(header, token);
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) throw err;
      // Timeouts, bad answers, unusable or ambiguous key sets: not the token's fault.
      throw new Refused('keys_unavailable');
    }
  };
}

// The claims jose leaves to us: one audience, iat not ahead, the right verified email.
function checkIdentity(
  payload: JWTPayload,
  keyId: string,
  settings: OidcSettings,
  latestIssue: number,
): OidcResult {
  if (typeof payload.aud !== 'string') return { ok: false, reason: 'audience' };
  if ((payload.iat as number) > latestIssue) return { ok: false, reason: 'not_yet_valid' };
  if (payload['email'] !== settings.serviceAccountEmail) return { ok: false, reason: 'email' };
  // A boolean true only: the string "true" is not what Google sends.
  if (payload['email_verified'] !== true) return { ok: false, reason: 'unverified_email' };
  const identity: OidcIdentity = {
    mode: 'oidc',
    issuer: payload.iss as string,
    audience: payload.aud,
    email: settings.serviceAccountEmail,
    keyId,
    issuedAt: payload.iat as number,
    expiresAt: payload.exp as number,
  };
  if (typeof payload.sub === 'string') identity.subject = payload.sub;
  return { ok: true, identity };
}

// By error class, never by message text.
function failureOf(err: unknown): OidcFailure {
  if (err instanceof Refused) return err.reason;
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'issuer';
    if (err.claim === 'aud') return 'audience';
    if (err.claim === 'nbf' && err.reason === 'check_failed') return 'not_yet_valid';
    return 'malformed';
  }
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return 'malformed';
  // A bad signature, a disallowed algorithm, an unknown key id, a key too weak for RS256.
  return 'signature';
}
