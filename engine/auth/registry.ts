/**
 * Boot-time construction of a route's signature verifier from its `auth`
 * block. Every configuration problem is found here, once, and thrown as a
 * ConfigError naming the offending key under `at`; keys are decoded here
 * too, so nothing about the configuration is re-checked per request.
 */
import { MAX_SECRETS, type RouteAuth } from '../../schemas/auth.ts';
import { ConfigError } from '../config.ts';
import { joinPath } from '../validation.ts';
import { createGithubVerifier } from './github.ts';
import { createHmacVerifier, type HmacSettings } from './hmac.ts';
import { BODY_ONLY, compileSignedContent } from './signed-content.ts';
import { createSlackVerifier } from './slack.ts';
import { createStandardWebhooksVerifier } from './standard-webhooks.ts';
import { decodeStandardWebhooksKey } from './standard-webhooks-keys.ts';
import { createStripeVerifier } from './stripe.ts';
import { DEFAULT_TOLERANCE_SECONDS } from './timestamp.ts';
import { isTimed } from './schemes.ts';
import type { Verifier } from './verifier.ts';

/** Keys that only the generic `hmac` scheme reads. */
export const HMAC_ONLY_KEYS = [
  'header',
  'algorithm',
  'encoding',
  'prefix',
  'signedContent',
  'timestampHeader',
] as const;

type Secret = { value: string; path: string };

/** The configured secrets in order (index 0 = `secret` or `secrets[0]`), with their paths. */
function configuredSecrets(auth: RouteAuth, at: string): Secret[] {
  const { secret, secrets } = auth;
  if (secret !== undefined && secrets !== undefined) {
    throw new ConfigError(joinPath(at, 'secrets'), 'give either secret or secrets, not both');
  }
  const list =
    secrets === undefined
      ? secret === undefined
        ? []
        : [{ value: secret, path: joinPath(at, 'secret') }]
      : secrets.map((value, i) => ({ value, path: joinPath(at, `secrets.${i}`) }));
  if (list.length === 0) {
    throw new ConfigError(
      joinPath(at, 'secret'),
      `scheme ${auth.scheme} needs a secret (or secrets)`,
    );
  }
  if (list.length > MAX_SECRETS) {
    throw new ConfigError(joinPath(at, 'secrets'), `at most ${MAX_SECRETS} secrets`);
  }
  for (const { value, path } of list) {
    if (typeof value !== 'string' || value.trim() === '') {
      throw new ConfigError(path, 'a secret must be a non-empty string');
    }
  }
  return list;
}

function checkKeysApply(auth: RouteAuth, at: string): void {
  if (auth.scheme !== 'hmac') {
    for (const key of HMAC_ONLY_KEYS) {
      if (auth[key] !== undefined) {
        throw new ConfigError(joinPath(at, key), `only applies to scheme hmac, not ${auth.scheme}`);
      }
    }
  }
  if (auth.toleranceSeconds !== undefined && !isTimed(auth)) {
    const why =
      auth.scheme === 'hmac'
        ? 'needs a timestampHeader: without one there is no signed time to check'
        : `scheme ${auth.scheme} signs no timestamp`;
    throw new ConfigError(joinPath(at, 'toleranceSeconds'), why);
  }
}

function tolerance(auth: RouteAuth, at: string): number {
  const seconds = auth.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400) {
    throw new ConfigError(
      joinPath(at, 'toleranceSeconds'),
      'must be whole seconds from 1 to 86400',
    );
  }
  return seconds;
}

function hmacSettings(auth: RouteAuth, at: string): HmacSettings {
  if (auth.header === undefined) {
    throw new ConfigError(joinPath(at, 'header'), 'scheme hmac needs the signature header');
  }
  const header = auth.header.toLowerCase();
  const timestampHeader = auth.timestampHeader?.toLowerCase();
  const content =
    auth.signedContent === undefined ? BODY_ONLY : compileSignedContent(auth.signedContent);
  if (typeof content === 'string') throw new ConfigError(joinPath(at, 'signedContent'), content);
  if (content.headers.includes(header)) {
    throw new ConfigError(joinPath(at, 'signedContent'), 'cannot include the signature header');
  }
  // An unsigned timestamp proves nothing: anyone could move it into the window.
  if (timestampHeader !== undefined && !content.headers.includes(timestampHeader)) {
    throw new ConfigError(
      joinPath(at, 'timestampHeader'),
      `must be signed: add {{headers.${timestampHeader}}} to signedContent`,
    );
  }
  return {
    header,
    algorithm: auth.algorithm ?? 'sha256',
    encoding: auth.encoding ?? 'hex',
    prefix: auth.prefix ?? '',
    content,
    timestampHeader,
    toleranceSeconds: tolerance(auth, at),
  };
}

// Stripe's secrets are whsec_ and 32 characters; 8 leaves room without letting a stub through.
const STRIPE_MIN_SECRET_LENGTH = 6 + 8;

function stripeSecrets(secrets: readonly Secret[]): string[] {
  for (const { value, path } of secrets) {
    if (!value.startsWith('whsec_')) {
      throw new ConfigError(path, "a Stripe endpoint's signing secret starts with whsec_");
    }
    // A bare or short whsec_ is an unset variable (`whsec_${SUFFIX}`), not a secret.
    if (value.length < STRIPE_MIN_SECRET_LENGTH) {
      throw new ConfigError(
        path,
        `a Stripe signing secret is whsec_ followed by at least ${STRIPE_MIN_SECRET_LENGTH - 6} characters`,
      );
    }
  }
  return secrets.map((s) => s.value);
}

function standardWebhooksKeys(secrets: readonly Secret[]) {
  return secrets.map(({ value, path }) => {
    const key = decodeStandardWebhooksKey(value);
    if (typeof key === 'string') throw new ConfigError(path, key);
    return key;
  });
}

/** Build the verifier for a signature scheme; throws ConfigError at the offending key. */
export function createVerifier(auth: RouteAuth, at: string): Verifier {
  if (auth.scheme === 'token') {
    throw new ConfigError(
      joinPath(at, 'scheme'),
      'token is the hook token, not a signature scheme',
    );
  }
  checkKeysApply(auth, at);
  const secrets = configuredSecrets(auth, at);
  const values = secrets.map((s) => s.value);
  switch (auth.scheme) {
    case 'github':
      return createGithubVerifier(values);
    case 'stripe':
      return createStripeVerifier(stripeSecrets(secrets), tolerance(auth, at));
    case 'slack':
      return createSlackVerifier(values, tolerance(auth, at));
    case 'standard-webhooks':
      return createStandardWebhooksVerifier(standardWebhooksKeys(secrets), tolerance(auth, at));
    case 'hmac':
      return createHmacVerifier(values, hmacSettings(auth, at));
    default:
      throw new ConfigError(joinPath(at, 'scheme'), `unknown scheme ${String(auth.scheme)}`);
  }
}
