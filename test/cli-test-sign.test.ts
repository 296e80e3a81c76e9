/**
 * `hookgate test --sign`: a payload file tried against a signed route goes
 * through the server's own stages, signed with the route's first secret as
 * its sender would sign it; without a signature the same request is refused.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runHookgate, tempDir } from './helpers/process.ts';

const temp = tempDir();
afterAll(() => temp.cleanup());

const config = path.join(temp.dir, 'hookgate.yaml');
writeFileSync(
  config,
  `hooks:
  enabled: true
  token: cli-sign-token-0123456789
  mappings:
    - { match: { path: gh }, action: wake, text: "gh {{payload.n}}", auth: { scheme: github, secret: s1 } }
    - { match: { path: st }, action: wake, text: "st {{payload.n}}", auth: { scheme: stripe, secret: whsec_abcdefgh12 } }
    - { match: { path: sl }, action: wake, text: "sl {{payload.n}}", auth: { scheme: slack, secret: s2 } }
    - match: { path: sw }
      action: wake
      text: "sw {{payload.n}}"
      auth: { scheme: standard-webhooks, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }
    - match: { path: hm }
      action: wake
      text: "hm {{payload.n}}"
      auth:
        scheme: hmac
        secret: s3
        header: x-sig
        encoding: base64
        signedContent: "{{headers.x-ts}}.{{body}}"
        timestampHeader: x-ts
    - { match: { path: plain }, action: wake, text: "plain {{payload.n}}" }
runtime: { dataDir: ./data }
`,
);
const payload = path.join(temp.dir, 'payload.json');
writeFileSync(payload, '{"n": 7}');

const test = (name: string, ...extra: string[]) =>
  runHookgate(['test', name, '--config', config, '--payload', payload, ...extra]);

describe('hookgate test --sign', () => {
  it.each([
    ['gh', 'github'],
    ['st', 'stripe'],
    ['sl', 'slack'],
    ['sw', 'standard-webhooks'],
    ['hm', 'hmac'],
  ])(
    'a %s request signed with --sign is authenticated by %s and accepted',
    async (name, scheme) => {
      const result = await test(name, '--sign');
      expect(result.stderr).toBe('');
      expect(result.stdout).toContain(`Authenticated: ${scheme}, secret #0`);
      expect(result.stdout).toContain('Result: 200');
      expect(result.code).toBe(0);
    },
  );

  it.each(['gh', 'st', 'sl', 'sw', 'hm'])(
    'the same %s request unsigned is refused 401',
    async (name) => {
      const result = await test(name);
      expect(result.stdout).toContain('Refused: 401 unauthorized');
      expect(result.code).toBe(1);
    },
  );

  it('a token route carries the hook token without --sign', async () => {
    const result = await test('plain');
    expect(result.stdout).toContain('Authenticated: token');
    expect(result.code).toBe(0);
  });

  it('--sign on a route without an auth block is a clear error', async () => {
    const result = await test('plain', '--sign');
    expect(result.stderr).toContain('--sign: the route "plain" has no auth block to sign for');
    expect(result.code).toBe(2);
  });
});
