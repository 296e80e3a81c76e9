/**
 * The config audit (spec 5.7 guidance): a config with no risky setting gets
 * no warning; each risky setting added alone gets exactly the warning naming
 * it; no warning ever quotes the hook token. Token strength as a table.
 */
import { createHash } from 'node:crypto';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { auditConfig, estimateTokenBits, isWeakToken } from '../engine/audit.ts';
import { resolveConfig } from '../engine/config.ts';
import type { Config } from '../schemas/config.ts';
import { HEADER_VALUE_PATTERN } from '../schemas/credentials.ts';

type Raw = {
  server: Record<string, unknown>;
  hooks: Record<string, unknown>;
  agents: { list: Array<{ id: string }> };
  admin?: Record<string, unknown>;
};

/** Validate as the loader does (defaults filled, cross-field rules), no env substitution. */
function load(raw: Raw): Config {
  return resolveConfig(raw, { baseDir: '/tmp', env: null }).config as Config;
}

const settings = (config: Config) => auditConfig(config).map((w) => w.setting);

// A strong token: a hash of anything is 64 random-looking hex characters.
const strongToken = fc
  .string()
  .map((seed) => createHash('sha256').update(`hook:${seed}`).digest('hex'));
const agentIds = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), {
  minLength: 2,
  maxLength: 5,
});

/** A config with no risky setting: loopback, strong tokens, restricted routing. */
const safeConfig = fc.record({
  host: fc.constantFrom('127.0.0.1', '127.0.0.53', 'localhost', '::1'),
  token: strongToken,
  prefixes: fc.option(fc.constant(['hook:']), { nil: undefined }),
  agents: fc.oneof(fc.constant<string[]>([]), fc.constant<string[]>(['main']), agentIds),
  admin: fc.option(
    fc.record({
      host: fc.constantFrom('127.0.0.1', 'localhost', '::1'),
      token: fc.option(fc.constant(createHash('sha256').update('admin').digest('base64url')), {
        nil: undefined,
      }),
    }),
    { nil: undefined },
  ),
});

type Safe = typeof safeConfig extends fc.Arbitrary<infer T> ? T : never;

function raw(safe: Safe): Raw {
  return {
    server: { host: safe.host, port: 0 },
    hooks: {
      enabled: true,
      token: safe.token,
      ...(safe.prefixes && { allowedSessionKeyPrefixes: safe.prefixes }),
      ...(safe.agents.length > 1 && { allowedAgentIds: safe.agents }),
    },
    agents: { list: safe.agents.map((id) => ({ id })) },
    ...(safe.admin && {
      admin: {
        port: 0,
        host: safe.admin.host,
        ...(safe.admin.token && { token: safe.admin.token }),
      },
    }),
  };
}

// A private network is beyond loopback too: everything on it reaches the hooks.
const publicHost = fc.constantFrom(
  '10.1.2.3',
  '192.168.0.10',
  '0.0.0.0',
  '::',
  '203.0.113.7',
  '2001:db8::1',
  'hooks.example.com',
);
// What the config accepts as a token at all (visible ASCII, inner spaces allowed).
const headerToken = new RegExp(HEADER_VALUE_PATTERN);
const weakToken = fc.oneof(
  // Short, whatever the characters a token may have.
  fc.string({ minLength: 1, maxLength: 31 }).filter((s) => headerToken.test(s)),
  // Long but made of a handful of characters.
  fc.string({ unit: fc.constantFrom(...'abc123XYZ'), minLength: 32, maxLength: 200 }),
  // Digits only, under 128 bits.
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 32, maxLength: 38 }),
);

/** One risky change to a safe config, and the settings it must be warned about. */
const risks: Array<[string, fc.Arbitrary<(r: Raw) => void>, (r: Raw) => string[]]> = [
  [
    'server.host beyond loopback, no trustedProxies',
    publicHost.map((host) => (r: Raw) => {
      r.server['host'] = host;
    }),
    () => ['server.host'],
  ],
  [
    'hooks.allowRequestSessionKey true',
    fc.constant((r: Raw) => {
      r.hooks['allowRequestSessionKey'] = true;
    }),
    // Without prefixes the missing restriction is named too.
    (r) =>
      r.hooks['allowedSessionKeyPrefixes']
        ? ['hooks.allowRequestSessionKey']
        : ['hooks.allowRequestSessionKey', 'hooks.allowedSessionKeyPrefixes'],
  ],
  [
    'several agents, any agent allowed',
    fc.tuple(agentIds, fc.boolean()).map(([ids, star]) => (r: Raw) => {
      r.agents.list = ids.map((id) => ({ id }));
      if (star) r.hooks['allowedAgentIds'] = ['*'];
      else delete r.hooks['allowedAgentIds'];
    }),
    () => ['hooks.allowedAgentIds'],
  ],
  [
    'a weak hooks.token',
    weakToken.map((token) => (r: Raw) => {
      r.hooks['token'] = token;
    }),
    () => ['hooks.token'],
  ],
  [
    'admin.keepPayloads true',
    fc.constant((r: Raw) => {
      r.admin = { port: 0, ...r.admin, keepPayloads: true };
    }),
    () => ['admin.keepPayloads'],
  ],
  [
    'admin listener beyond loopback',
    publicHost.map((host) => (r: Raw) => {
      r.admin = { port: 0, token: createHash('sha256').update('admin-host').digest('hex'), host };
    }),
    () => ['admin.host'],
  ],
  [
    'two signed routes sharing a secret (the second rotating to it, or on a preset)',
    fc
      .tuple(fc.stringMatching(/^[A-Za-z0-9]{16,40}$/), fc.boolean(), fc.boolean())
      .map(([secret, rotating, preset]) => (r: Raw) => {
        const second = rotating ? { secrets: [`${secret}-new`, secret] } : { secret };
        const signed = (path: string, auth: Record<string, unknown>) => ({
          match: { path },
          action: 'wake',
          text: 'x',
          auth: { scheme: 'github', ...auth },
        });
        if (preset) {
          r.hooks['presets'] = ['github'];
          r.hooks['github'] = { auth: { secret } };
          r.hooks['mappings'] = [signed('ci', second)];
        } else r.hooks['mappings'] = [signed('ci', { secret }), signed('deploys', second)];
      }),
    (r) => [r.hooks['github'] ? 'hooks.mappings.0.auth' : 'hooks.mappings.1.auth'],
  ],
];

describe('auditConfig', () => {
  test.prop([safeConfig])('a config without risky settings has no warnings', (safe) => {
    expect(auditConfig(load(raw(safe)))).toEqual([]);
  });

  describe.each(risks)('%s', (_name, change, expected) => {
    test.prop([safeConfig, change])(
      'alone, yields exactly the warning naming it, never the token',
      (safe, apply) => {
        const config = raw(safe);
        apply(config);
        const warnings = auditConfig(load(config));
        expect(warnings.map((w) => w.setting)).toEqual(expected(config));
        const token = String(config.hooks['token']);
        for (const warning of warnings) {
          expect(warning.message).not.toBe('');
          if (token.length >= 8) expect(warning.message).not.toContain(token);
        }
      },
    );
  });

  test.prop([safeConfig, publicHost, fc.constantFrom(['10.0.0.0/8'], ['127.0.0.1'])])(
    'a public server.host behind listed trustedProxies is not warned about',
    (safe, host, proxies) => {
      const config = raw(safe);
      config.server = { ...config.server, host, trustedProxies: proxies };
      expect(settings(load(config))).toEqual([]);
    },
  );

  test.prop([
    safeConfig,
    fc.uniqueArray(fc.stringMatching(/^[A-Za-z0-9]{16,40}$/), { minLength: 2, maxLength: 2 }),
  ])(
    'signed routes with secrets of their own, and one path with several mappings, are not warned about',
    (safe, [a, b]) => {
      const config = raw(safe);
      const signed = (path: string, secret: string) => ({
        match: { path },
        action: 'wake',
        text: 'x',
        auth: { scheme: 'github', secret },
      });
      config.hooks['mappings'] = [
        signed('ci', a as string),
        signed('ci', a as string),
        signed('deploys', b as string),
      ];
      expect(settings(load(config))).toEqual([]);
    },
  );

  test.prop([safeConfig])(
    'no allowedSessionKeyPrefixes is not warned about while request session keys are off',
    (safe) => {
      const config = raw({ ...safe, prefixes: undefined });
      expect(settings(load(config))).toEqual([]);
    },
  );
});

describe('hook token strength', () => {
  it.each([
    ['openssl rand -hex 32', createHash('sha256').update('a').digest('hex'), false],
    ['openssl rand -hex 16', 'f3a9c0d17be24856a0c9e1f47d3b2c58', false],
    ['24 random bytes in base64url', 'q3Zr8vN1xYb0TQ_-aK7mW2cL9sPd4EfG', false],
    ['a word', 'changeme', true],
    ['a passphrase under 32 characters', 'correct-horse-battery-staple', true],
    ['one character repeated', 'a'.repeat(100), true],
    ['a short pattern repeated', 'abc123'.repeat(10), true],
    ['32 digits (106 bits)', '31415926535897932384626433832795', true],
    ['40 digits (133 bits)', '3141592653589793238462643383279502884197', false],
  ])('%s: weak=%s', (_name, token, weak) => {
    expect(isWeakToken(token)).toBe(weak);
  });

  it('estimates bits by length and the smallest usual alphabet', () => {
    expect(estimateTokenBits('f'.repeat(32))).toBe(128);
    expect(estimateTokenBits('9'.repeat(10))).toBeCloseTo(33.2, 1);
    expect(estimateTokenBits('AAAA==')).toBe(24);
  });
});
