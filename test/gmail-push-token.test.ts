/**
 * The shared-token mode of Gmail push authentication (the secret in the
 * push URL or in x-gog-token, compared in constant time, never echoed), and
 * the boot checks: a mode without the settings it needs is a ConfigError
 * naming the missing key, before any request.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../engine/config.ts';
import { createPushAuthenticator, type PushAuthSettings } from '../engine/gmail/push-auth.ts';
import {
  AUDIENCE,
  ISSUERS,
  makeKey,
  oidcSettings,
  SERVICE_ACCOUNT,
  startKeyServer,
} from './helpers/jwks-stand-in.ts';

describe('token mode', () => {
  const SECRET = 'push-secret-0123456789abcdef';
  const auth = createPushAuthenticator({
    push: {
      mode: 'token',
      jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs',
      issuers: ISSUERS,
    },
    pushToken: SECRET,
  });

  it.each([
    ['the token in the URL', { queryToken: SECRET }, 'query'],
    ['the token in x-gog-token', { tokenHeader: SECRET }, 'header'],
    ['the same token in both', { queryToken: SECRET, tokenHeader: SECRET }, 'both'],
  ])('%s is accepted', async (_, credentials, source) => {
    expect(await auth.authenticate(credentials)).toEqual({
      ok: true,
      identity: { mode: 'token', source },
    });
  });

  it.each([
    ['no token', 'missing', {}],
    ['a bearer token instead', 'missing', { authorization: 'Bearer a.b.c' }],
    ['a wrong token', 'token_mismatch', { queryToken: 'push-secret-0123456789abcdeX' }],
    ['a prefix of the token', 'token_mismatch', { tokenHeader: SECRET.slice(0, -1) }],
    ['the token with more after it', 'token_mismatch', { tokenHeader: `${SECRET}x` }],
    ['an empty token', 'token_mismatch', { queryToken: '' }],
    [
      'two different tokens, one right',
      'token_mismatch',
      { queryToken: SECRET, tokenHeader: 'other' },
    ],
    [
      'two different tokens, header right',
      'token_mismatch',
      { queryToken: 'other', tokenHeader: SECRET },
    ],
    ['an oversized token', 'malformed', { tokenHeader: 'x'.repeat(5000) }],
  ])('%s -> %s', async (_, reason, credentials) => {
    const result = await auth.authenticate(credentials);
    expect(result).toEqual({ ok: false, reason });
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });
});

describe('settings a mode needs are required at boot', () => {
  const push = { jwksUrl: 'https://www.googleapis.com/oauth2/v3/certs', issuers: ISSUERS };
  it.each([
    [
      'oidc without an audience',
      { push: { ...push, mode: 'oidc', serviceAccountEmail: SERVICE_ACCOUNT } },
      'hooks.gmail.push.audience',
    ],
    [
      'oidc with a blank audience',
      { push: { ...push, mode: 'oidc', audience: ' ', serviceAccountEmail: SERVICE_ACCOUNT } },
      'hooks.gmail.push.audience',
    ],
    [
      'oidc without a service account',
      { push: { ...push, mode: 'oidc', audience: AUDIENCE } },
      'hooks.gmail.push.serviceAccountEmail',
    ],
    [
      'oidc fetching its keys over plain http',
      { push: { ...oidcSettings('http://keys.example/certs').push } },
      'hooks.gmail.push.jwksUrl',
    ],
    ['token without a push token', { push: { ...push, mode: 'token' } }, 'hooks.gmail.pushToken'],
    [
      'token with a push token too long to compare',
      { push: { ...push, mode: 'token' }, pushToken: 'x'.repeat(5000) },
      'hooks.gmail.pushToken',
    ],
  ] as const)('%s', (_, settings, path) => {
    const thrown = errorOf(() => createPushAuthenticator(settings as PushAuthSettings));
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).path).toBe(path);
  });

  it.each(['http://127.0.0.1:9/certs', 'http://localhost/certs', 'http://[::1]/certs'])(
    'plain http on loopback is allowed (%s)',
    (url) => {
      expect(createPushAuthenticator(oidcSettings(url)).mode).toBe('oidc');
    },
  );

  it('no key set is fetched at boot', async () => {
    const idle = await startKeyServer([await makeKey('key-1')]);
    try {
      createPushAuthenticator(oidcSettings(idle.url));
      expect(idle.hits).toBe(0);
    } finally {
      await idle.close();
    }
  });
});

function errorOf(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
}
