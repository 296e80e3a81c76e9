/**
 * Which request headers rules, templates and transforms may see: credential
 * and signature headers are hidden by name pattern, whatever the sender.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { isSecretHeader, publicHeaders } from '../engine/headers.ts';

describe('headers visible to rules and templates', () => {
  it.each([
    'authorization',
    'proxy-authorization',
    'x-hookgate-token',
    'cookie',
    'x-authorization',
    'x-access-key',
    'x-api-key',
    'x-apikey',
    'x-goog-api-key',
    'api_key',
    'x-auth-token',
    'x-gitlab-token',
    'x-amz-security-token',
    'x-telegram-bot-api-secret-token',
    'x-webhook-secret',
    'x-hub-signature-256',
    'stripe-signature',
    'x-slack-signature',
    'x-shopify-hmac-sha256',
    'x-db-password',
    'x-session-id',
    'x-client-credentials',
    'x-accesstoken',
  ])('a credential header %s is hidden', (name) => {
    expect(isSecretHeader(name)).toBe(true);
    expect(publicHeaders({ [name]: 'secret-value', 'x-github-event': 'push' })).toEqual({
      'x-github-event': 'push',
    });
  });

  it.each([
    'content-type',
    'user-agent',
    'x-github-event',
    'x-github-delivery',
    'x-gitlab-event',
    'x-forwarded-for',
    'idempotency-key',
    'stripe-version',
  ])('an ordinary header %s stays visible', (name) => {
    expect(isSecretHeader(name)).toBe(false);
  });

  const word = fc.stringMatching(/^[a-z0-9]{1,8}$/);
  const credential = fc.constantFrom(
    'key',
    'token',
    'secret',
    'password',
    'signature',
    'authorization',
    'auth',
    'credentials',
  );

  test.prop([fc.array(word, { maxLength: 3 }), credential, fc.array(word, { maxLength: 2 })])(
    'any header name with a credential part is hidden (x-*-token, *-key, *-secret, ...)',
    (before, secret, after) => {
      const name = [...before, secret, ...after].join('-');
      expect(isSecretHeader(name)).toBe(true);
      expect(Object.keys(publicHeaders({ [name]: 'v' }))).toEqual([]);
    },
  );
});
