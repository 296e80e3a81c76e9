/**
 * createVerifier: the scheme picks the verifier, and every mistake in a
 * route's auth block is a ConfigError at boot naming the offending key.
 */
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { ConfigError } from '../engine/config.ts';
import type { RouteAuth } from '../schemas/auth.ts';

const AT = 'hooks.mappings.0.auth';
const WHSEC = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const WHPK = 'whpk_iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=';

function configError(auth: unknown): { path: string; message: string } {
  try {
    createVerifier(auth as RouteAuth, AT);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { path: (err as ConfigError).path, message: (err as Error).message };
  }
  throw new Error('expected a ConfigError');
}

describe('createVerifier', () => {
  it.each([
    [{ scheme: 'github', secret: 's' }, 'github'],
    [
      { scheme: 'stripe', secrets: ['whsec_aaaaaaaa', 'whsec_bbbbbbbb'], toleranceSeconds: 60 },
      'stripe',
    ],
    [{ scheme: 'slack', secret: 's', toleranceSeconds: 600 }, 'slack'],
    [{ scheme: 'standard-webhooks', secrets: [WHSEC, WHPK, WHSEC.slice(6)] }, 'standard-webhooks'],
    [{ scheme: 'hmac', secret: 's', header: 'X-Sig' }, 'hmac'],
    [
      {
        scheme: 'hmac',
        secret: 's',
        header: 'x-sig',
        signedContent: '{{headers.x-ts}}.{{body}}',
        timestampHeader: 'X-Ts',
        toleranceSeconds: 30,
      },
      'hmac',
    ],
    [{ scheme: 'github', secret: 's', requireToken: true, verifyToken: 'v' }, 'github'],
  ] as const)('%j builds a %s verifier', (auth, scheme) => {
    expect(createVerifier(auth as RouteAuth, AT).scheme).toBe(scheme);
  });

  it.each([
    ['no secret', { scheme: 'github' }, `${AT}.secret`],
    ['both secret and secrets', { scheme: 'github', secret: 'a', secrets: ['b'] }, `${AT}.secrets`],
    ['a blank secret', { scheme: 'github', secrets: ['a', ' '] }, `${AT}.secrets.1`],
    ['too many secrets', { scheme: 'github', secrets: Array(9).fill('s') }, `${AT}.secrets`],
    ['the token scheme', { scheme: 'token' }, `${AT}.scheme`],
    ['an unknown scheme', { scheme: 'nope', secret: 's' }, `${AT}.scheme`],
    ['a Stripe secret without whsec_', { scheme: 'stripe', secret: 'sk_live_x' }, `${AT}.secret`],
    [
      'a whsec_ that is not base64',
      { scheme: 'standard-webhooks', secret: 'whsec_not base64!' },
      `${AT}.secret`,
    ],
    ['a short whsec_', { scheme: 'standard-webhooks', secret: 'whsec_c2hvcnQ=' }, `${AT}.secret`],
    [
      'a whpk_ of the wrong length',
      { scheme: 'standard-webhooks', secrets: [WHSEC, 'whpk_AAAA'] },
      `${AT}.secrets.1`,
    ],
    [
      'a whpk_ that is not base64',
      { scheme: 'standard-webhooks', secret: 'whpk_%%%' },
      `${AT}.secret`,
    ],
    [
      'a whsk_ signing key',
      { scheme: 'standard-webhooks', secret: `whsk_${WHSEC.slice(6)}` },
      `${AT}.secret`,
    ],
    ['hmac without a header', { scheme: 'hmac', secret: 's' }, `${AT}.header`],
    ['header on github', { scheme: 'github', secret: 's', header: 'x-sig' }, `${AT}.header`],
    ['algorithm on slack', { scheme: 'slack', secret: 's', algorithm: 'sha1' }, `${AT}.algorithm`],
    [
      'encoding on stripe',
      { scheme: 'stripe', secret: 'whsec_aaaaaaaa', encoding: 'hex' },
      `${AT}.encoding`,
    ],
    ['prefix on github', { scheme: 'github', secret: 's', prefix: 'sha1=' }, `${AT}.prefix`],
    [
      'signedContent on standard-webhooks',
      { scheme: 'standard-webhooks', secret: WHSEC, signedContent: '{{body}}' },
      `${AT}.signedContent`,
    ],
    [
      'timestampHeader on github',
      { scheme: 'github', secret: 's', timestampHeader: 'x-ts' },
      `${AT}.timestampHeader`,
    ],
    [
      'toleranceSeconds on github',
      { scheme: 'github', secret: 's', toleranceSeconds: 60 },
      `${AT}.toleranceSeconds`,
    ],
    [
      'toleranceSeconds on hmac without a timestamp',
      { scheme: 'hmac', secret: 's', header: 'x', toleranceSeconds: 60 },
      `${AT}.toleranceSeconds`,
    ],
    [
      'a zero tolerance',
      { scheme: 'slack', secret: 's', toleranceSeconds: 0 },
      `${AT}.toleranceSeconds`,
    ],
    [
      'an unknown placeholder',
      { scheme: 'hmac', secret: 's', header: 'x', signedContent: '{{payload}}' },
      `${AT}.signedContent`,
    ],
    [
      'no {{body}}',
      { scheme: 'hmac', secret: 's', header: 'x', signedContent: '{{headers.y}}' },
      `${AT}.signedContent`,
    ],
    [
      '{{body}} twice',
      { scheme: 'hmac', secret: 's', header: 'x', signedContent: '{{body}}{{body}}' },
      `${AT}.signedContent`,
    ],
    [
      'an unclosed placeholder',
      { scheme: 'hmac', secret: 's', header: 'x', signedContent: '{{body}}.{{headers.y' },
      `${AT}.signedContent`,
    ],
    [
      'the signature inside its content',
      { scheme: 'hmac', secret: 's', header: 'X', signedContent: '{{headers.x}}{{body}}' },
      `${AT}.signedContent`,
    ],
    [
      'an unsigned timestampHeader',
      { scheme: 'hmac', secret: 's', header: 'x', timestampHeader: 'x-ts' },
      `${AT}.timestampHeader`,
    ],
  ])('%s is a config error', (_label, auth, path) => {
    const error = configError(auth);
    expect(error.path).toBe(path);
    expect(error.message.startsWith(`${path}: `)).toBe(true);
  });

  it('never puts a secret in the message', () => {
    const secret = 'whsec_not base64 but secret!';
    expect(configError({ scheme: 'standard-webhooks', secret }).message).not.toContain('secret!');
  });
});
