/**
 * The generic hmac scheme: the shared contract for Shopify-, Meta- and a
 * timestamped sender, the Shopify and Meta vectors, the knobs (algorithm,
 * encoding, prefix, signedContent with headers), and the refusals.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import type { RouteAuth } from '../schemas/auth.ts';
import { meta, shopify, timestampedHmac } from './helpers/signature-senders.ts';
import { describeVerifierContract, NOW, run } from './verifier-contract.ts';

describeVerifierContract(shopify);
describeVerifierContract(meta);
describeVerifierContract(timestampedHmac);

const SHOPIFY = createVerifier(
  {
    scheme: 'hmac',
    secret: 'test_secret_key',
    header: 'X-Shopify-Hmac-Sha256',
    encoding: 'base64',
  },
  'auth',
);
const SHOPIFY_BODY = '{"foo": "bar"}';
const SHOPIFY_SIGNATURE = 'B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=';
const META = createVerifier(
  { scheme: 'hmac', secret: 'test_app_secret', header: 'X-Hub-Signature-256', prefix: 'sha256=' },
  'auth',
);
const META_BODY = '{"object":"whatsapp_business_account","entry":[]}';
const META_SIGNATURE = 'sha256=dec6a680679a968e7e0319355b23599cbfc54502c0784668e9618baa0c633756';

const mac = (algorithm: string, secret: string, content: string, encoding: 'hex' | 'base64') =>
  createHmac(algorithm, secret).update(content).digest(encoding);

describe('hmac vectors', () => {
  it('Shopify: base64, no prefix', () => {
    expect(run(SHOPIFY, { 'X-Shopify-Hmac-Sha256': SHOPIFY_SIGNATURE }, SHOPIFY_BODY)).toEqual({
      scheme: 'hmac',
      secretIndex: 0,
    });
  });

  it('Meta: sha256= and lower-case hex', () => {
    expect(run(META, { 'X-Hub-Signature-256': META_SIGNATURE }, META_BODY)).toEqual({
      scheme: 'hmac',
      secretIndex: 0,
    });
  });

  it("GitHub's docs vector verifies through the Meta settings (same construction)", () => {
    const v = createVerifier(
      {
        scheme: 'hmac',
        secret: "It's a Secret to Everybody",
        header: 'x-hub-signature-256',
        prefix: 'sha256=',
      },
      'auth',
    );
    const sig = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
    expect(run(v, { 'X-Hub-Signature-256': sig }, 'Hello, World!')).toMatchObject({
      secretIndex: 0,
    });
  });

  it.each([
    ['sha1', 'hex'],
    ['sha1', 'base64'],
    ['sha512', 'hex'],
    ['sha512', 'base64'],
  ] as const)('algorithm %s, encoding %s', (algorithm, encoding) => {
    const v = createVerifier(
      { scheme: 'hmac', secret: 's3cret', header: 'x-sig', algorithm, encoding },
      'auth',
    );
    const sig = mac(algorithm, 's3cret', 'body', encoding);
    expect(run(v, { 'X-Sig': sig }, 'body')).toMatchObject({ secretIndex: 0 });
    // A digest of another algorithm has another length: refused before any MAC.
    const other = mac(algorithm === 'sha1' ? 'sha256' : 'sha1', 's3cret', 'body', encoding);
    expect(run(v, { 'X-Sig': other }, 'body')).toBe('malformed');
  });

  it('signedContent joins literal text, headers (as sent) and the body', () => {
    const auth: RouteAuth = {
      scheme: 'hmac',
      secret: 's3cret',
      header: 'x-sig',
      signedContent: 'v2:{{ headers.X-Request-Id }}:{{headers.x-ts}}:{{body}}',
      timestampHeader: 'x-ts',
    };
    const v = createVerifier(auth, 'auth');
    const sig = mac('sha256', 's3cret', `v2:req-1:${NOW}:payload`, 'hex');
    const headers = { 'x-sig': sig, 'x-request-id': 'req-1', 'x-ts': String(NOW) };
    expect(run(v, headers, 'payload')).toEqual({
      scheme: 'hmac',
      secretIndex: 0,
      timestamp: NOW,
      skewSeconds: 0,
    });
    expect(run(v, { ...headers, 'x-request-id': 'req-2' }, 'payload')).toBe('mismatch');
    expect(run(v, { 'x-sig': sig, 'x-ts': String(NOW) }, 'payload')).toBe('missing');
    expect(run(v, { ...headers, 'x-request-id': ['req-1', 'req-1'] }, 'payload')).toBe('duplicate');
    expect(run(v, headers, 'payload', NOW + 301)).toBe('stale');
  });

  it('a signed header with bytes above 0x7f is hashed as the bytes that were sent', () => {
    const latin1 = 'caf\u00e9';
    const v = createVerifier(
      {
        scheme: 'hmac',
        secret: 's3cret',
        header: 'x-sig',
        signedContent: '{{headers.x-name}}{{body}}',
      },
      'auth',
    );
    const sig = createHmac('sha256', 's3cret')
      .update(Buffer.from(`${latin1}b`, 'latin1'))
      .digest('hex');
    expect(run(v, { 'x-sig': sig, 'x-name': latin1 }, 'b')).toMatchObject({ secretIndex: 0 });
  });
});

describe('hmac refusals', () => {
  it.each([
    ['uppercase hex', META_SIGNATURE.toUpperCase().replace('SHA256=', 'sha256=')],
    ['a missing prefix', META_SIGNATURE.slice(7)],
    ['another prefix', META_SIGNATURE.replace('sha256=', 'sha1=')],
    ['truncated hex', META_SIGNATURE.slice(0, -1)],
    ['base64 instead of hex', `sha256=${SHOPIFY_SIGNATURE}`],
  ])('Meta: %s is malformed', (_label, signature) => {
    expect(run(META, { 'X-Hub-Signature-256': signature }, META_BODY)).toBe('malformed');
  });

  it.each([
    ['junk base64', 'B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7!='],
    ['unpadded base64', SHOPIFY_SIGNATURE.slice(0, -1)],
    ['hex instead of base64', Buffer.from(SHOPIFY_SIGNATURE, 'base64').toString('hex')],
  ])('Shopify: %s is malformed', (_label, signature) => {
    expect(run(SHOPIFY, { 'X-Shopify-Hmac-Sha256': signature }, SHOPIFY_BODY)).toBe('malformed');
  });

  it('Shopify: the url-safe spelling of a valid digest is malformed', () => {
    const body = '{"n": 6}';
    const standard = 'eVmppCJngUlAkoG82K/rLmbVy/gEcPfUZ8fQbv+Yeew=';
    expect(run(SHOPIFY, { 'X-Shopify-Hmac-Sha256': standard }, body)).toMatchObject({
      secretIndex: 0,
    });
    const urlSafe = standard.replaceAll('+', '-').replaceAll('/', '_');
    expect(run(SHOPIFY, { 'X-Shopify-Hmac-Sha256': urlSafe }, body)).toBe('malformed');
  });

  it('Shopify: a signature for another body is a mismatch', () => {
    expect(run(SHOPIFY, { 'X-Shopify-Hmac-Sha256': SHOPIFY_SIGNATURE }, '{"foo":"bar"}')).toBe(
      'mismatch',
    );
  });
});
