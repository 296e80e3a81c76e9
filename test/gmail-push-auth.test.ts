/**
 * OIDC authentication of Gmail's Pub/Sub pushes against a local stand-in
 * for Google's key set: tokens the stand-in's keys sign are accepted when
 * every claim is right; each wrong claim, forgery and algorithm trick is
 * refused by name; rotation refetches the keys, a flood of unknown key ids
 * does not. The key endpoint's failures: gmail-push-keys.test.ts; the
 * shared-token mode and boot checks: gmail-push-token.test.ts.
 */
import { exportJWK, exportSPKI, generateKeyPair, importJWK, SignJWT, UnsecuredJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPushAuthenticator, type PushAuthOptions } from '../engine/gmail/push-auth.ts';
import {
  AUDIENCE,
  bearer,
  ISSUERS,
  type KeyServer,
  makeKey,
  oidcSettings,
  SERVICE_ACCOUNT,
  type SigningKey,
  signToken,
  startKeyServer,
} from './helpers/jwks-stand-in.ts';

let server: KeyServer;
let current: SigningKey;
let stranger: SigningKey;

beforeAll(async () => {
  [current, stranger] = await Promise.all([makeKey('key-1'), makeKey('key-1')]);
  server = await startKeyServer([current]);
});
afterAll(() => server.close());

const authenticatorFor = (url = server.url, options: PushAuthOptions = {}) =>
  createPushAuthenticator(oidcSettings(url), options);
const now = () => Math.floor(Date.now() / 1000);

describe('accepted tokens', () => {
  it('a token Pub/Sub would send, with the claims that were checked', async () => {
    const token = await signToken(current);
    const result = await authenticatorFor().authenticate(bearer(token));
    expect(result).toEqual({
      ok: true,
      identity: {
        mode: 'oidc',
        issuer: 'https://accounts.google.com',
        audience: AUDIENCE,
        email: SERVICE_ACCOUNT,
        subject: '111122223333444455556',
        keyId: 'key-1',
        issuedAt: expect.any(Number),
        expiresAt: expect.any(Number),
      },
    });
    expect(JSON.stringify(result)).not.toContain(token);
  });

  it.each([
    ['the legacy issuer form', { iss: 'accounts.google.com' }],
    [
      'a token 59 minutes old (Pub/Sub reuses tokens up to an hour)',
      { iat: now() - 3540, exp: now() + 60 },
    ],
    ['a clock 20 s ahead of ours', { iat: now() + 20 }],
    ['no subject', { sub: undefined }],
  ])('%s', async (_, claims) => {
    const result = await authenticatorFor().authenticate(bearer(await signToken(current, claims)));
    expect(result.ok).toBe(true);
  });

  it('the scheme name in any case', async () => {
    const token = await signToken(current);
    expect((await authenticatorFor().authenticate({ authorization: `bearer ${token}` })).ok).toBe(
      true,
    );
  });

  it('keys are fetched once for many pushes', async () => {
    const auth = authenticatorFor();
    const before = server.hits;
    const token = await signToken(current);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => auth.authenticate(bearer(token))),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect(server.hits - before).toBe(1);
  });
});

describe('refused claims', () => {
  it.each([
    ['another issuer', 'issuer', { iss: 'https://evil.example' }],
    ['no issuer', 'issuer', { iss: undefined }],
    ['another audience', 'audience', { aud: 'https://other.example/push' }],
    [
      'an audience list that includes ours',
      'audience',
      { aud: [AUDIENCE, 'https://other.example'] },
    ],
    ['no audience', 'audience', { aud: undefined }],
    ['another service account', 'email', { email: 'someone@my-project.iam.gserviceaccount.com' }],
    ['the service account in another case', 'email', { email: SERVICE_ACCOUNT.toUpperCase() }],
    ['no email', 'email', { email: undefined }],
    ['email_verified false', 'unverified_email', { email_verified: false }],
    ['email_verified the string "true"', 'unverified_email', { email_verified: 'true' }],
    ['no email_verified', 'unverified_email', { email_verified: undefined }],
    ['expired two minutes ago', 'expired', { iat: now() - 3720, exp: now() - 120 }],
    ['not valid before ten minutes from now', 'not_yet_valid', { nbf: now() + 600 }],
    ['issued ten minutes from now', 'not_yet_valid', { iat: now() + 600 }],
    ['no expiry', 'malformed', { exp: undefined }],
    ['no issue time', 'malformed', { iat: undefined }],
    ['expiry not a number', 'malformed', { exp: 'tomorrow' }],
  ])('%s -> %s', async (_, reason, claims) => {
    const token = await signToken(current, claims);
    expect(await authenticatorFor().authenticate(bearer(token))).toEqual({ ok: false, reason });
  });

  it.each([
    ['no Authorization header', 'missing', {}],
    ['an empty Authorization header', 'missing', { authorization: '' }],
    ['Basic credentials', 'malformed', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['Bearer without a token', 'malformed', { authorization: 'Bearer ' }],
    ['a token of two parts', 'malformed', { authorization: 'Bearer aGVhZGVy.cGF5bG9hZA' }],
    ['a token of four parts', 'malformed', { authorization: 'Bearer a.b.c.d' }],
    ['a header that is not JSON', 'malformed', { authorization: 'Bearer bm90IGpzb24.e30.c2ln' }],
    ['the push token in token mode', 'missing', { tokenHeader: 'some-token-value-123' }],
  ])('%s -> %s', async (_, reason, credentials) => {
    expect(await authenticatorFor().authenticate(credentials)).toEqual({ ok: false, reason });
  });
});

describe('attacks on the token', () => {
  it('forgery: signed by another key that claims the same kid', async () => {
    const token = await signToken(stranger);
    expect(await authenticatorFor().authenticate(bearer(token))).toEqual({
      ok: false,
      reason: 'signature',
    });
  });

  it('tampering: claims changed after signing', async () => {
    const [header, , signature] = (await signToken(current)).split('.');
    const payload = Buffer.from(
      JSON.stringify({ email: SERVICE_ACCOUNT, iat: now(), exp: now() + 60 }),
    ).toString('base64url');
    const result = await authenticatorFor().authenticate(
      bearer(`${header}.${payload}.${signature}`),
    );
    expect(result).toEqual({ ok: false, reason: 'signature' });
  });

  it('alg none: an unsigned token', async () => {
    const token = new UnsecuredJWT({
      iss: ISSUERS[0],
      aud: AUDIENCE,
      email: SERVICE_ACCOUNT,
      email_verified: true,
    })
      .setIssuedAt()
      .setExpirationTime('1h')
      .encode();
    expect(await authenticatorFor().authenticate(bearer(token))).toEqual({
      ok: false,
      reason: 'signature',
    });
  });

  it('algorithm confusion: HS256 keyed with the public key', async () => {
    const publicPem = await exportSPKI(
      (await generateKeyPair('RS256', { extractable: true })).publicKey,
    );
    const token = await signToken(current);
    const confused = await new SignJWT(
      JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()),
    )
      .setProtectedHeader({ alg: 'HS256', kid: current.kid })
      .sign(Buffer.from(publicPem));
    expect(await authenticatorFor().authenticate(bearer(confused))).toEqual({
      ok: false,
      reason: 'signature',
    });
  });

  it('algorithm swap: RS512 with the right key is not RS256', async () => {
    const rs512 = await importJWK(await exportJWK(current.privateKey), 'RS512');
    const token = await new SignJWT({ ...(await decodedClaims()) })
      .setProtectedHeader({ alg: 'RS512', kid: current.kid })
      .sign(rs512);
    expect(await authenticatorFor().authenticate(bearer(token))).toEqual({
      ok: false,
      reason: 'signature',
    });
  });

  it('no kid: every key would have to be tried', async () => {
    const token = await signToken(current, {}, { kid: undefined });
    expect(await authenticatorFor().authenticate(bearer(token))).toEqual({
      ok: false,
      reason: 'malformed',
    });
  });

  it('oversized token: refused before parsing and before any key fetch', async () => {
    const auth = authenticatorFor();
    const before = server.hits;
    const huge = `${'a'.repeat(3000)}.${'b'.repeat(3000)}.c`;
    expect(await auth.authenticate(bearer(huge))).toEqual({ ok: false, reason: 'malformed' });
    expect(await auth.authenticate({ authorization: `Bearer ${'x'.repeat(1_000_000)}` })).toEqual({
      ok: false,
      reason: 'malformed',
    });
    expect(server.hits).toBe(before);
  });
});

async function decodedClaims(): Promise<Record<string, unknown>> {
  const token = await signToken(current);
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
}

describe('key rotation', () => {
  it('an unknown kid refetches the key set once, then is refused as a bad signature', async () => {
    const rotating = await startKeyServer([current]);
    try {
      const auth = authenticatorFor(rotating.url, { keysCooldownMs: 0 });
      expect((await auth.authenticate(bearer(await signToken(current)))).ok).toBe(true);
      const unknown = await makeKey('key-unknown');
      const result = await auth.authenticate(bearer(await signToken(unknown)));
      expect(result).toEqual({ ok: false, reason: 'signature' });
      expect(rotating.hits).toBe(2);
    } finally {
      await rotating.close();
    }
  });

  it("Google's rotation: a token signed by a new key is accepted after a refetch", async () => {
    const rotating = await startKeyServer([current]);
    try {
      const auth = authenticatorFor(rotating.url, { keysCooldownMs: 0 });
      expect((await auth.authenticate(bearer(await signToken(current)))).ok).toBe(true);
      const next = await makeKey('key-2');
      rotating.serveKeys([current, next]);
      expect((await auth.authenticate(bearer(await signToken(next)))).ok).toBe(true);
      expect(rotating.hits).toBe(2);
    } finally {
      await rotating.close();
    }
  });

  it('key id flood: random kids cause no refetch within the cooldown', async () => {
    const flooded = await startKeyServer([current]);
    try {
      const auth = authenticatorFor(flooded.url);
      expect((await auth.authenticate(bearer(await signToken(current)))).ok).toBe(true);
      const tokens = await Promise.all(
        Array.from({ length: 10 }, (_, i) => signToken(current, {}, { kid: `random-${i}` })),
      );
      const results = await Promise.all(tokens.map((t) => auth.authenticate(bearer(t))));
      expect(results.every((r) => !r.ok && r.reason === 'signature')).toBe(true);
      expect(flooded.hits).toBe(1);
    } finally {
      await flooded.close();
    }
  });
});
