/**
 * Who may push Gmail notifications: built once at boot from `hooks.gmail`,
 * it authenticates each Pub/Sub push by the configured mode, an OIDC token
 * signed by Google (push-oidc.ts) or the shared push token (push-token.ts).
 * Settings a mode needs but the schema leaves optional are required here,
 * so a misconfigured push route fails at boot, never per request. Failures
 * are data; neither the token nor the secret is ever returned.
 */
import type { HooksConfig } from '../../schemas/config.ts';
import { ConfigError } from '../config.ts';
import { joinPath } from '../validation.ts';
import { isSecureUrl } from '../outbound/secure-url.ts';
import {
  createOidcCheck,
  type OidcFailure,
  type OidcIdentity,
  type OidcOptions,
} from './push-oidc.ts';
import {
  createTokenCheck,
  MAX_PUSH_TOKEN_CHARS,
  type PresentedToken,
  type TokenFailure,
  type TokenIdentity,
} from './push-token.ts';

/** The settings the authenticator reads: `hooks.gmail.push` and `hooks.gmail.pushToken`. */
export type PushAuthSettings = Pick<HooksConfig['gmail'], 'push' | 'pushToken'>;

/** Tunables (see OidcOptions) and the config path named in errors (default `hooks.gmail`). */
export type PushAuthOptions = OidcOptions & { at?: string };

/** What a push presents; the route passes `queryToken` from its own URL only. */
export type PushCredentials = PresentedToken & {
  /** The `Authorization` header. */
  authorization?: string;
};

/** Why a push was not authenticated (log it; answer 401 or 403). */
export type PushAuthFailure = OidcFailure | TokenFailure;

/** What was proven about the sender. */
export type PushIdentity = OidcIdentity | TokenIdentity;

/** The outcome of one authentication. */
export type PushAuthResult =
  | { ok: true; identity: PushIdentity }
  | { ok: false; reason: PushAuthFailure };

/** Authenticates one push; never throws. */
export type PushAuthenticator = {
  mode: 'oidc' | 'token';
  /** The WWW-Authenticate of a refusal (RFC 9110 asks one of every 401): see PUSH_CHALLENGES. */
  challenge: string;
  authenticate(credentials: PushCredentials): Promise<PushAuthResult>;
};

/**
 * The challenge of each mode, the same whatever was wrong (no error parameter: a guesser learns
 * nothing of why). OIDC tokens come as Bearer; the shared token is no HTTP scheme (it rides in
 * `?token=` or its own header), so its challenge names the header it goes in.
 */
export const PUSH_CHALLENGES = { oidc: 'Bearer', token: 'x-gog-token' } as const;

/** The push authenticator for the settings; throws ConfigError when the mode lacks a setting. */
export function createPushAuthenticator(
  settings: PushAuthSettings,
  options: PushAuthOptions = {},
): PushAuthenticator {
  const at = options.at ?? 'hooks.gmail';
  if (settings.push.mode === 'token') {
    const checkToken = createTokenCheck(requiredPushToken(settings, at));
    return {
      mode: 'token',
      challenge: PUSH_CHALLENGES.token,
      authenticate: async (credentials) => checkToken(credentials),
    };
  }
  const checkBearer = createOidcCheck(oidcSettings(settings, joinPath(at, 'push')), options);
  return {
    mode: 'oidc',
    challenge: PUSH_CHALLENGES.oidc,
    authenticate: (credentials) => checkBearer(credentials.authorization),
  };
}

function requiredPushToken(settings: PushAuthSettings, at: string): string {
  const token = settings.pushToken;
  if (token === undefined) {
    throw new ConfigError(joinPath(at, 'pushToken'), 'required when push.mode is token');
  }
  if (token.length > MAX_PUSH_TOKEN_CHARS) {
    throw new ConfigError(joinPath(at, 'pushToken'), `at most ${MAX_PUSH_TOKEN_CHARS} characters`);
  }
  return token;
}

// The schema lets audience and serviceAccountEmail be absent (token mode needs neither);
// without them any Google-signed token for any subscription would pass.
function oidcSettings(settings: PushAuthSettings, at: string) {
  const { audience, serviceAccountEmail, jwksUrl, issuers } = settings.push;
  if (audience === undefined || audience.trim() === '') {
    throw new ConfigError(
      joinPath(at, 'audience'),
      "required when mode is oidc: the subscription's audience (the push endpoint URL if none was set)",
    );
  }
  if (serviceAccountEmail === undefined) {
    throw new ConfigError(
      joinPath(at, 'serviceAccountEmail'),
      'required when mode is oidc: the service account the subscription pushes as',
    );
  }
  // Keys fetched over plain http could be swapped on the way: every token would then pass.
  if (!isSecureUrl(jwksUrl)) {
    throw new ConfigError(joinPath(at, 'jwksUrl'), 'an https URL (plain http on loopback only)');
  }
  if (issuers.length === 0) throw new ConfigError(joinPath(at, 'issuers'), 'at least one issuer');
  return { audience, serviceAccountEmail, jwksUrl, issuers };
}
