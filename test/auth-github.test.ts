/**
 * GitHub signatures: the shared contract with @octokit/webhooks-methods as
 * the sender, GitHub's published vectors, and the refusals GitHub-specific
 * attacks aim at (a SHA-1 downgrade, case games on the hex).
 */
import { createHmac } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { github } from './helpers/signature-senders.ts';
import { describeVerifierContract, run } from './verifier-contract.ts';

describeVerifierContract(github);

const DOCS_SECRET = "It's a Secret to Everybody";
const DOCS_SIGNATURE = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
const verifier = createVerifier({ scheme: 'github', secret: DOCS_SECRET }, 'auth');

describe('github vectors', () => {
  it.each([
    [DOCS_SECRET, 'Hello, World!', DOCS_SIGNATURE],
    [
      'mysecret',
      '{"foo":"bar"}',
      'sha256=4864d2759938a15468b5df9ade20bf161da9b4f737ea61794142f3484236bda3',
    ],
  ])('secret %j, body %j -> %s', async (secret, body, signature) => {
    expect(await sign(secret, body)).toBe(signature);
    const v = createVerifier({ scheme: 'github', secret }, 'auth');
    expect(run(v, { 'X-Hub-Signature-256': signature }, body)).toEqual({
      scheme: 'github',
      secretIndex: 0,
    });
  });
});

describe('github refusals', () => {
  const body = 'Hello, World!';
  it.each([
    ['uppercase hex', DOCS_SIGNATURE.toUpperCase().replace('SHA256=', 'sha256=')],
    ['an uppercase prefix', DOCS_SIGNATURE.replace('sha256=', 'SHA256=')],
    ['a truncated digest', DOCS_SIGNATURE.slice(0, -2)],
    ['an odd-length digest', DOCS_SIGNATURE.slice(0, -1)],
    ['a digest with a non-hex pair', `${DOCS_SIGNATURE.slice(0, -2)}zz`],
    ['an over-long digest', `${DOCS_SIGNATURE}00`],
    ['no prefix', DOCS_SIGNATURE.slice('sha256='.length)],
    ['the prefix alone', 'sha256='],
    ['a space after the prefix', DOCS_SIGNATURE.replace('=', '= ')],
    ['the sha1 prefix', DOCS_SIGNATURE.replace('sha256=', 'sha1=')],
  ])('%s is malformed', (_label, signature) => {
    expect(run(verifier, { 'X-Hub-Signature-256': signature }, body)).toBe('malformed');
  });

  it('downgrade to sha1: a request with only X-Hub-Signature is missing its signature', () => {
    const sha1 = 'sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59';
    expect(run(verifier, { 'X-Hub-Signature': sha1 }, body)).toBe('missing');
  });

  it('downgrade to sha1: a valid sha1 beside a bad sha256 does not help', () => {
    const sha1 = 'sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59';
    const bad = `sha256=${'0'.repeat(64)}`;
    expect(run(verifier, { 'X-Hub-Signature': sha1, 'X-Hub-Signature-256': bad }, body)).toBe(
      'mismatch',
    );
  });

  it('header duplication: the right signature repeated with a wrong one is refused', () => {
    const wrong = `sha256=${'0'.repeat(64)}`;
    const headers = { 'X-Hub-Signature-256': [wrong, DOCS_SIGNATURE] };
    expect(run(verifier, headers, body)).toBe('duplicate');
  });

  it('a signature joined by a proxy (", ") is malformed', () => {
    const headers = { 'X-Hub-Signature-256': `${DOCS_SIGNATURE}, ${DOCS_SIGNATURE}` };
    expect(run(verifier, headers, body)).toBe('malformed');
  });

  it('verifies the raw bytes: a body that is not UTF-8 verifies when signed as bytes', () => {
    const raw = Buffer.from([0xff, 0xfe, 0x00, 0x41]);
    const signature = `sha256=${createHmac('sha256', DOCS_SECRET).update(raw).digest('hex')}`;
    expect(run(verifier, { 'X-Hub-Signature-256': signature }, raw)).toMatchObject({
      secretIndex: 0,
    });
    expect(run(verifier, { 'X-Hub-Signature-256': signature }, raw.toString('utf8'))).toBe(
      'mismatch',
    );
  });
});
