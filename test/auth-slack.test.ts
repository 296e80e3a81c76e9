/**
 * Slack signatures: the shared contract (signed here with node:crypto, as
 * Slack publishes no signer), the bolt-js vector, and bolt's own
 * verifySlackRequest as the oracle: for the same request it and our
 * verifier agree, except where we are stricter on purpose (future stamps).
 */
import { createHmac } from 'node:crypto';
import { fc, test } from '@fast-check/vitest';
import { verifySlackRequest } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { slack } from './helpers/signature-senders.ts';
import { describeVerifierContract, run } from './verifier-contract.ts';

describeVerifierContract(slack);

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const TS = 1531420618;
const BODY =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
const SIGNATURE = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
const verifier = createVerifier({ scheme: 'slack', secret: SECRET }, 'auth');

const headers = (signature: string, stamp: string | number = TS) => ({
  'X-Slack-Signature': signature,
  'X-Slack-Request-Timestamp': String(stamp),
});

function boltAccepts(signature: string, stamp: number, body: string, nowSeconds: number): boolean {
  try {
    verifySlackRequest({
      signingSecret: SECRET,
      body,
      headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': stamp },
      nowMilliseconds: nowSeconds * 1000,
    });
    return true;
  } catch {
    return false;
  }
}

const sign = (stamp: number, body: string) =>
  `v0=${createHmac('sha256', SECRET).update(`v0:${stamp}:${body}`).digest('hex')}`;

describe('slack vectors', () => {
  it('the api.slack.com example (via bolt-js) verifies, and bolt agrees', () => {
    expect(sign(TS, BODY)).toBe(SIGNATURE);
    expect(boltAccepts(SIGNATURE, TS, BODY, TS + 10)).toBe(true);
    expect(run(verifier, headers(SIGNATURE), BODY, TS + 10)).toEqual({
      scheme: 'slack',
      secretIndex: 0,
      timestamp: TS,
      skewSeconds: 10,
    });
  });

  test.prop([fc.string({ unit: 'grapheme' }), fc.integer({ min: -600, max: 600 }), fc.boolean()])(
    'agrees with bolt on signed requests of any body and age (bolt ignores the future)',
    (body, age, tamper) => {
      const signature = sign(TS, body);
      const presented = tamper
        ? `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`
        : signature;
      const ours = typeof run(verifier, headers(presented), body, TS + age) === 'object';
      const bolt = boltAccepts(presented, TS, body, TS + age);
      // bolt accepts any future stamp; we hold the future to the same 300 s.
      expect(ours).toBe(bolt && age >= -300);
    },
  );
});

describe('slack refusals', () => {
  it.each([
    ['an unknown version', SIGNATURE.replace('v0=', 'v1=')],
    ['uppercase hex', `v0=${SIGNATURE.slice(3).toUpperCase()}`],
    ['truncated hex', SIGNATURE.slice(0, -2)],
    ['no version', SIGNATURE.slice(3)],
  ])('%s is malformed', (_label, signature) => {
    expect(run(verifier, headers(signature), BODY, TS)).toBe('malformed');
  });

  it.each([
    ['milliseconds', `${TS}000`],
    ['a leading zero', `0${TS}`],
    ['a sign', `+${TS}`],
    ['a decimal', `${TS}.0`],
    ['spaces', ` ${TS}`],
    ['hex', `0x${TS.toString(16)}`],
  ])(
    'a timestamp with %s is malformed (bolt would read some as the same number)',
    (_label, stamp) => {
      expect(run(verifier, headers(SIGNATURE, stamp), BODY, TS)).toBe('malformed');
    },
  );

  it('a missing timestamp is missing', () => {
    expect(run(verifier, { 'X-Slack-Signature': SIGNATURE }, BODY, TS)).toBe('missing');
  });

  it('replay with a fresh timestamp: moving the stamp into the window breaks the signature', () => {
    expect(run(verifier, headers(SIGNATURE, TS + 3600), BODY, TS + 3600)).toBe('mismatch');
  });

  it('a request from the future is stale, though bolt would take it', () => {
    expect(boltAccepts(SIGNATURE, TS, BODY, TS - 3600)).toBe(true);
    expect(run(verifier, headers(SIGNATURE), BODY, TS - 3600)).toBe('stale');
  });

  it('a configured tolerance widens the window both ways', () => {
    const wide = createVerifier({ scheme: 'slack', secret: SECRET, toleranceSeconds: 900 }, 'auth');
    expect(run(wide, headers(SIGNATURE), BODY, TS + 900)).toMatchObject({ secretIndex: 0 });
    expect(run(wide, headers(SIGNATURE), BODY, TS - 901)).toBe('stale');
  });
});
