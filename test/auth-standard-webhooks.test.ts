/**
 * Standard Webhooks and Svix: the shared contract with the standardwebhooks
 * and svix libraries as senders (both header families), the spec library's
 * v1 vector and the v1a (Ed25519) vector, rotation across HMAC and public
 * keys, and the attacks on the header list and on the two header families.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { standardWebhooks, svix } from './helpers/signature-senders.ts';
import { describeVerifierContract, run } from './verifier-contract.ts';

describeVerifierContract(standardWebhooks);
describeVerifierContract(svix);

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const PUBLIC_KEY = 'whpk_iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w=';
const ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const TS = 1614265330;
const BODY = '{"test": 2432232314}';
const V1 = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
const V1A =
  'v1a,Ykcu7AtGZGmZxFEH1Gaa2Nd7feY/CTuruoL4fqgnKwfbHU4DhemoVHZdvGfIvKvn4BIgwktLGGPGIr/i9nK7AA==';
const OTHER_V1 = `v1,${Buffer.alloc(32, 7).toString('base64')}`;

const verifier = createVerifier({ scheme: 'standard-webhooks', secret: SECRET }, 'auth');
const both = createVerifier({ scheme: 'standard-webhooks', secrets: [SECRET, PUBLIC_KEY] }, 'auth');
const family = (prefix: string, signature: string, id = ID, stamp = String(TS)) => ({
  [`${prefix}-id`]: id,
  [`${prefix}-timestamp`]: stamp,
  [`${prefix}-signature`]: signature,
});

describe('standard webhooks vectors', () => {
  it.each(['webhook', 'svix'])('the v1 vector verifies under %s-* headers', (prefix) => {
    expect(run(verifier, family(prefix, V1), BODY, TS)).toEqual({
      scheme: 'standard-webhooks',
      secretIndex: 0,
      timestamp: TS,
      skewSeconds: 0,
    });
  });

  it('the v1a vector verifies against its whpk_ key, reporting the key', () => {
    expect(run(both, family('webhook', V1A), BODY, TS)).toMatchObject({ secretIndex: 1 });
  });

  it('the whsec_ prefix is optional (bare base64 is the same key)', () => {
    const bare = createVerifier({ scheme: 'standard-webhooks', secret: SECRET.slice(6) }, 'auth');
    expect(run(bare, family('webhook', V1), BODY, TS)).toMatchObject({ secretIndex: 0 });
  });

  it('unknown versions and non-matching entries around the right one are skipped', () => {
    const list = `v2,whatever ${OTHER_V1} ${V1} v1b,zz`;
    expect(run(verifier, family('webhook', list), BODY, TS)).toMatchObject({ secretIndex: 0 });
  });

  it('a v1a signature from a fresh key pair verifies; any change to it does not', () => {
    const pair = generateKeyPairSync('ed25519');
    const raw = pair.publicKey.export({ format: 'jwk' }).x as string;
    const key = `whpk_${Buffer.from(raw, 'base64url').toString('base64')}`;
    const v = createVerifier({ scheme: 'standard-webhooks', secrets: [SECRET, key] }, 'auth');
    const signature = sign(null, Buffer.from(`${ID}.${TS}.${BODY}`), pair.privateKey);
    const entry = `v1a,${signature.toString('base64')}`;
    expect(run(v, family('webhook', entry), BODY, TS)).toMatchObject({ secretIndex: 1 });
    signature[10] = (signature[10] as number) ^ 1;
    expect(run(v, family('webhook', `v1a,${signature.toString('base64')}`), BODY, TS)).toBe(
      'mismatch',
    );
  });

  it('a v1a entry is not checked against an HMAC secret, nor v1 against a public key', () => {
    expect(run(verifier, family('webhook', V1A), BODY, TS)).toBe('mismatch');
    const publicOnly = createVerifier({ scheme: 'standard-webhooks', secret: PUBLIC_KEY }, 'auth');
    expect(run(publicOnly, family('webhook', V1), BODY, TS)).toBe('mismatch');
  });
});

describe('standard webhooks refusals', () => {
  it.each([
    ['junk base64', 'v1,!!!!g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ'],
    ['unpadded base64', V1.slice(0, -1)],
    ['non-canonical base64 (unused bits set)', V1.replace('1OE=', '1OF=')],
    ['a truncated digest', 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ'],
    ['an entry without a version', ',g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='],
    ['an entry without a comma', 'g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='],
    ['two spaces between entries', `${OTHER_V1}  ${V1}`],
    ['unknown versions only', 'v2,abc v3,def'],
    ['a v1a entry of HMAC length', `v1a,${V1.slice(3)}`],
  ])('%s is malformed', (_label, signature) => {
    expect(run(verifier, family('webhook', signature), BODY, TS)).toBe('malformed');
  });

  it('signature-count flood: more than 8 entries are refused before any MAC', () => {
    const nine = [...Array.from({ length: 8 }, () => OTHER_V1), V1].join(' ');
    expect(run(verifier, family('webhook', nine), BODY, TS)).toBe('malformed');
    const eight = [...Array.from({ length: 7 }, () => OTHER_V1), V1].join(' ');
    expect(run(verifier, family('webhook', eight), BODY, TS)).toMatchObject({ secretIndex: 0 });
  });

  it.each([
    ['an id with a dot', 'msg.1', String(TS)],
    ['a timestamp with a dot', ID, `${TS}.5`],
    ['an id with a space', 'msg 1', String(TS)],
    ['a timestamp in milliseconds', ID, `${TS}000`],
    ['a timestamp with a leading zero', ID, `0${TS}`],
  ])('dot smuggling and odd values: %s is malformed', (_label, id, stamp) => {
    expect(run(verifier, family('webhook', V1, id, stamp), BODY, TS)).toBe('malformed');
  });

  it('id substitution: another id under the same signature does not match', () => {
    expect(run(verifier, family('webhook', V1, 'msg_other'), BODY, TS)).toBe('mismatch');
  });

  describe('svix/webhook header mixing', () => {
    it('the same delivery under both families, identical, verifies', () => {
      const headers = { ...family('webhook', V1), ...family('svix', V1) };
      expect(run(verifier, headers, BODY, TS)).toMatchObject({ secretIndex: 0 });
    });

    it('a signed svix delivery with an added unsigned webhook-id is refused', () => {
      const headers = { ...family('svix', V1), 'webhook-id': 'msg_attacker_picked' };
      expect(run(verifier, headers, BODY, TS)).toBe('malformed');
    });

    it('a signed webhook delivery with an added unsigned svix-id is refused', () => {
      const headers = { ...family('webhook', V1), 'svix-id': 'msg_attacker_picked' };
      expect(run(verifier, headers, BODY, TS)).toBe('malformed');
    });

    it('two complete families that disagree are refused, whichever is signed', () => {
      const headers = { ...family('svix', V1), ...family('webhook', V1, 'msg_attacker_picked') };
      expect(run(verifier, headers, BODY, TS)).toBe('malformed');
    });

    it('id from one family, timestamp and signature from the other, is refused', () => {
      const headers = {
        'webhook-id': ID,
        'svix-timestamp': String(TS),
        'svix-signature': V1,
      };
      expect(run(verifier, headers, BODY, TS)).toBe('malformed');
    });
  });
});
