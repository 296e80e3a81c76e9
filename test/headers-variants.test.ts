/**
 * Credential headers in spellings the first pattern list missed: run-together
 * `*key` names, British `authorisation`, plurals, short forms (pwd, authz,
 * psk), one-time codes. Each is hidden from rules, templates and transforms.
 */
import { describe, expect, it } from 'vitest';
import { isSecretHeader, publicHeaders } from '../engine/headers.ts';

describe('credential headers in other spellings', () => {
  it.each([
    'x-accesskey',
    'x-privatekey',
    'privatekey',
    'x-authkey',
    'x-webhookkey',
    'x-signingkey',
    'x-sharedkey',
    'x-api-keys',
    'x-keys',
    'x-authorisation',
    'x-authorizations',
    'authorization2',
    'x-authcode',
    'x-authz',
    'x-authn',
    'x-oauth',
    'x-oauth2-token',
    'x-pwd',
    'x-pass',
    'x-passcode',
    'x-passphrase',
    'x-creds',
    'x-sessionid',
    'sessionid',
    'x-psk',
    'x-sas',
    'x-pat',
    'x-totp',
    'x-mfa-code',
    'x-2fa',
    'x-pin',
  ])('a credential header spelled %s is hidden', (name) => {
    expect(isSecretHeader(name)).toBe(true);
    expect(publicHeaders({ [name]: 'secret-value', 'x-github-event': 'push' })).toEqual({
      'x-github-event': 'push',
    });
  });

  it.each(['x-github-delivery', 'x-request-id', 'x-client-id', 'x-keyword', 'x-amz-date'])(
    'an ordinary header %s stays visible',
    (name) => {
      expect(isSecretHeader(name)).toBe(false);
    },
  );
});
