/**
 * Stripe signatures: the shared contract with stripe-node's
 * generateTestHeaderString as the sender, the vector generated from
 * stripe-node's own test inputs, rotation (several v1 entries), and the
 * header games: v0-only downgrade, signature-count flood, repeated t.
 */
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { stripeSender } from './helpers/signature-senders.ts';
import { describeVerifierContract, run } from './verifier-contract.ts';

describeVerifierContract(stripeSender);

const SECRET = 'whsec_test_secret';
const T = 1492774577;
const BODY = '{\n  "id": "evt_test_webhook",\n  "object": "event"\n}';
const V1 = 'c2f890decbc5ede7c5060bb9a6d31e0626a4342bacb9aeae2adb1bcea72f9812';
const verifier = createVerifier({ scheme: 'stripe', secret: SECRET }, 'auth');
const header = (value: string) => ({ 'Stripe-Signature': value });
const v1For = (secret: string, t = T) =>
  createHmac('sha256', secret).update(`${t}.${BODY}`).digest('hex');

describe('stripe vectors', () => {
  it('the stripe-node vector verifies, and stripe-node agrees on it', () => {
    const value = `t=${T},v1=${V1}`;
    expect(
      new Stripe('sk_test_x').webhooks.generateTestHeaderString({
        payload: BODY,
        secret: SECRET,
        timestamp: T,
      }),
    ).toBe(value);
    expect(run(verifier, header(value), BODY, T + 299)).toEqual({
      scheme: 'stripe',
      secretIndex: 0,
      timestamp: T,
      skewSeconds: 299,
    });
    expect(run(verifier, header(value), BODY, T + 301)).toBe('stale');
  });

  it('a far-future timestamp that stripe-node would accept is refused', () => {
    expect(run(verifier, header(`t=${T},v1=${V1}`), BODY, T - 301)).toBe('stale');
  });

  it('rotation: any v1 entry verifies against any secret, reporting the secret', () => {
    const rotated = createVerifier(
      { scheme: 'stripe', secrets: ['whsec_new_secret', SECRET] },
      'auth',
    );
    const value = `t=${T},v1=${'0'.repeat(64)},v1=${V1},v0=${'1'.repeat(64)}`;
    expect(run(rotated, header(value), BODY, T)).toMatchObject({ secretIndex: 1 });
  });

  it('the secret is used whole, prefix included (not base64-decoded)', () => {
    const decoded = Buffer.from('test_secret', 'base64');
    const value = `t=${T},v1=${createHmac('sha256', decoded).update(`${T}.${BODY}`).digest('hex')}`;
    expect(run(verifier, header(value), BODY, T)).toBe('mismatch');
  });

  it('unknown schemes are skipped', () => {
    expect(run(verifier, header(`t=${T},v9=x,v1=${V1}`), BODY, T)).toMatchObject({
      secretIndex: 0,
    });
  });
});

describe('stripe refusals', () => {
  it.each([
    ['no t', `v1=${V1}`],
    ['no v1', `t=${T}`],
    ['an empty v1', `t=${T},v1=`],
    ['uppercase hex', `t=${T},v1=${V1.toUpperCase()}`],
    ['truncated hex', `t=${T},v1=${V1.slice(0, 63)}`],
    ['a space after the comma', `t=${T}, v1=${V1}`],
    ['an item without =', `t=${T},v1`],
    ['an empty item', `t=${T},,v1=${V1}`],
    ['a timestamp in milliseconds', `t=${T}000,v1=${V1}`],
    ['a timestamp with a leading zero', `t=0${T},v1=${V1}`],
    ['a timestamp with a sign', `t=+${T},v1=${V1}`],
    ['a decimal timestamp', `t=${T}.0,v1=${V1}`],
    ['an empty timestamp', `t=,v1=${V1}`],
  ])('%s is malformed', (_label, value) => {
    expect(run(verifier, header(value), BODY, T)).toBe('malformed');
  });

  it('downgrade to v0: a header with only a v0 signature is refused', () => {
    const v0 = createHmac('sha256', SECRET).update(`${T}.${BODY}`).digest('hex');
    expect(run(verifier, header(`t=${T},v0=${v0}`), BODY, T)).toBe('malformed');
  });

  it('repeated t: a second timestamp cannot replace the signed one', () => {
    expect(run(verifier, header(`t=${T},v1=${V1},t=${T + 1000}`), BODY, T + 1000)).toBe(
      'malformed',
    );
  });

  it('signature-count flood: more than 8 v1 entries are refused before any MAC', () => {
    const nine = Array.from({ length: 9 }, () => `v1=${V1}`).join(',');
    expect(run(verifier, header(`t=${T},${nine}`), BODY, T)).toBe('malformed');
    const eight = Array.from({ length: 8 }, () => `v1=${V1}`).join(',');
    expect(run(verifier, header(`t=${T},${eight}`), BODY, T)).toMatchObject({ secretIndex: 0 });
  });

  it('item flood: thousands of unknown items are refused', () => {
    const junk = Array.from({ length: 1000 }, () => 'x=1').join(',');
    expect(run(verifier, header(`t=${T},v1=${V1},${junk}`), BODY, T)).toBe('malformed');
  });

  it('a timestamp replaced by an attacker no longer matches the signature', () => {
    expect(run(verifier, header(`t=${T + 100},v1=${V1}`), BODY, T + 100)).toBe('mismatch');
    expect(v1For(SECRET)).toBe(V1);
  });
});
