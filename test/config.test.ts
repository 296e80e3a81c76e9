/**
 * Configuration loading: schema defaults, ${VAR} substitution, boot rules
 * (each refusal names its path), normalisation and freezing.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { afterAll, describe, expect, it } from 'vitest';
import { normaliseHooksPath } from '../engine/config-rules.ts';
import { ConfigError, loadConfigFile, resolveConfig } from '../engine/config.ts';
import { tempDir } from './helpers/hookgate.ts';

const base = { baseDir: '/srv/hookgate', env: {} };
const enabled = (hooks: Record<string, unknown> = {}) => ({
  hooks: { enabled: true, token: 't0ken', ...hooks },
});

function problem(raw: unknown, env: Record<string, string> = {}): string {
  try {
    resolveConfig(raw, { ...base, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('config was accepted');
}

describe('defaults', () => {
  it('fills in the spec defaults', () => {
    const { config, dataDir } = resolveConfig({}, base);
    expect(config.hooks).toMatchObject({
      enabled: false,
      path: '/hooks',
      maxBodyBytes: 262_144,
      allowRequestSessionKey: false,
      maxTimeoutSeconds: 3600,
      idempotencyWindowSeconds: 86_400,
      authRateLimit: { maxFailures: 20, windowSeconds: 60, lockoutSeconds: 60 },
    });
    expect(config.hooks.allowedAgentIds).toBeUndefined();
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 8787, trustedProxies: [] });
    expect(dataDir).toBe('/srv/hookgate/data');
  });

  it('accepts a transform deadline below the CPU limit\'s default (the CPU limit is held to it)', () => {
    const { config } = resolveConfig(enabled({ transforms: { deadlineMs: 100 } }), base);
    expect(config.hooks.transforms).toMatchObject({ deadlineMs: 100, cpuTimeoutMs: 250 });
  });

  it('freezes the result deeply', () => {
    const { config } = resolveConfig(enabled({ allowedAgentIds: ['main'] }), base);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.hooks.allowedAgentIds)).toBe(true);
  });

  it('does not modify the object it was given', () => {
    const raw = enabled();
    resolveConfig(raw, base);
    expect(raw).toEqual(enabled());
  });
});

describe('refusals name the offending path', () => {
  it.each([
    [
      'enabled without a token',
      { hooks: { enabled: true } },
      'hooks.token: required when hooks.enabled is true',
    ],
    [
      'hook token equal to the gateway token',
      { gateway: { token: 't0ken' }, ...enabled() },
      'hooks.token: must differ from gateway.token',
    ],
    ['path "/"', enabled({ path: '/' }), 'hooks.path:'],
    [
      "a mapping's plain message of a zero-width space alone",
      enabled({ mappings: [{ match: { path: 'x' }, action: 'agent', message: '\u200b' }] }),
      'hooks.mappings.0.message: must not be blank (white space and invisible characters alone)',
    ],
    [
      'a model id without a provider',
      { agents: { defaults: { models: { '/gpt-5': {} } } } },
      'agents.defaults.models./gpt-5: model ids have the form <provider>/<model>',
    ],
    [
      'a model id without a model',
      { agents: { defaults: { models: { 'openai/': {} } } } },
      'agents.defaults.models.openai/: model ids have the form <provider>/<model>',
    ],
    [
      "an alias that is another model's id (requests for that id would go to this one)",
      { agents: { defaults: { models: { 'a/b': { alias: 'c/d' }, 'c/d': {} } } } },
      'agents.defaults.models.a/b.alias: alias "c/d" is the id of another model in the list',
    ],
    ['path with a query', enabled({ path: '/hooks?x' }), 'hooks.path:'],
    ['path with a dot segment', enabled({ path: '/a/../b' }), 'hooks.path:'],
    ['unknown top-level key', { ...enabled(), extra: 1 }, 'extra: unknown setting'],
    ['unknown hooks key', enabled({ tokn: 'x' }), 'hooks.tokn: unknown setting'],
    ['wrong type', enabled({ maxBodyBytes: 'big' }), 'hooks.maxBodyBytes'],
    ['empty token', { hooks: { enabled: true, token: '' } }, 'hooks.token'],
    [
      'a non-ASCII token (headers are read as Latin-1: it could never match)',
      enabled({ token: 'tökén-0123456789' }),
      'hooks.token: must be visible ASCII',
    ],
    [
      'a token ending in a space (header values are trimmed)',
      enabled({ token: 'token-0123456789 ' }),
      'hooks.token: must be visible ASCII',
    ],
    [
      'a non-ASCII admin token',
      { admin: { port: 0, token: 'admin-tökén-0123' } },
      'admin.token: must be visible ASCII',
    ],
    [
      'default key outside the prefixes',
      enabled({ defaultSessionKey: 'main', allowedSessionKeyPrefixes: ['hook:'] }),
      'hooks.defaultSessionKey',
    ],
    [
      'prefixes that refuse hook:<uuid>',
      enabled({ allowedSessionKeyPrefixes: ['ci:'] }),
      'hooks.allowedSessionKeyPrefixes',
    ],
    ['malformed default key', enabled({ defaultSessionKey: 'hook: x' }), 'hooks.defaultSessionKey'],
    ['duplicate agent ids', { agents: { list: [{ id: 'a' }, { id: 'a' }] } }, 'agents.list.1.id'],
    [
      'two default agents',
      {
        agents: {
          list: [
            { id: 'a', default: true },
            { id: 'b', default: true },
          ],
        },
      },
      'agents.list.1.default',
    ],
    [
      'model id without provider',
      { agents: { defaults: { models: { gpt: {} } } } },
      'agents.defaults.models.gpt',
    ],
    [
      'duplicate alias',
      { agents: { defaults: { models: { 'a/x': { alias: 'm' }, 'b/y': { alias: 'm' } } } } },
      'agents.defaults.models.b/y.alias',
    ],
    ['unknown channel', { channels: { fax: {} } }, 'channels.fax'],
    ['bad trusted proxy', { server: { trustedProxies: ['localhost'] } }, 'server.trustedProxies.0'],
    [
      'prototype key',
      JSON.parse('{"hooks":{"__proto__":{"enabled":true}}}'),
      'hooks.__proto__: unknown setting',
    ],
  ])('%s', (_name, raw, expected) => {
    expect(problem(raw)).toContain(expected);
  });

  it('never echoes the token in an error', () => {
    const message = problem({
      gateway: { token: 's3cret-value' },
      hooks: { enabled: true, token: 's3cret-value' },
    });
    expect(message).not.toContain('s3cret-value');
  });

  it('refuses a PostgreSQL URL that does not parse at boot (naming store.url, not the password)', () => {
    const message = problem({
      store: { kind: 'postgres', url: 'postgres://u:PGPASSWORD123@db.example:54x32/x' },
    });
    expect(message).toContain('store.url');
    expect(message).toContain('does not parse');
    expect(message).not.toContain('PGPASSWORD123');
  });

  it.each(['url', 'baseUrl'])(
    'never echoes a runner %s that does not parse (it may carry credentials), from the file or a variable',
    (field) => {
      const url = 'http://agent:PASSWORD123456@127.0.0.1:1/run?key=QUERYSECRET123456 x';
      const kind = field === 'url' ? 'http' : 'openai';
      for (const [value, env] of [
        [url, {}],
        ['${RUNNER_URL}', { RUNNER_URL: url }],
      ] as const) {
        const message = problem(
          { agents: { defaults: { runner: { kind, [field]: value } } } },
          env,
        );
        expect(message).toContain(`agents.defaults.runner.${field}`);
        expect(message).toContain('http:// or https:// URL');
        expect(message).not.toContain('PASSWORD123456');
        expect(message).not.toContain('QUERYSECRET123456');
      }
    },
  );
});

describe('${VAR} substitution', () => {
  it('substitutes variables anywhere in strings', () => {
    const { config } = resolveConfig(
      { hooks: { enabled: true, token: '${HOOKS_TOKEN}', path: '/${PREFIX}/in' } },
      { ...base, env: { HOOKS_TOKEN: 'abc', PREFIX: 'gw' } },
    );
    expect(config.hooks.token).toBe('abc');
    expect(config.hooks.path).toBe('/gw/in');
  });

  it('keeps $${ as a literal ${', () => {
    const { config } = resolveConfig(enabled({ defaultSessionKey: 'hook:$${x}' }), base);
    expect(config.hooks.defaultSessionKey).toBe('hook:${x}');
  });

  it('refuses an unset variable, naming the path and the variable', () => {
    expect(problem({ hooks: { enabled: true, token: '${NOPE}' } })).toBe(
      'hooks.token: environment variable NOPE is not set',
    );
  });
});

describe('config files', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());

  it('reads YAML and resolves dataDir from the file directory', () => {
    const file = path.join(temp.dir, 'hookgate.yaml');
    writeFileSync(file, 'hooks:\n  enabled: true\n  token: ${T}\nruntime:\n  dataDir: state\n');
    const loaded = loadConfigFile(file, { T: 'x' });
    expect(loaded.config.hooks.token).toBe('x');
    expect(loaded.dataDir).toBe(path.join(temp.dir, 'state'));
    expect(loaded.file).toBe(file);
  });

  it('reads JSON', () => {
    const file = path.join(temp.dir, 'hookgate.json');
    writeFileSync(file, JSON.stringify(enabled()));
    expect(loadConfigFile(file, {}).config.hooks.enabled).toBe(true);
  });

  it.each([
    ['invalid YAML', 'hooks: [unclosed'],
    ['duplicate keys', 'hooks:\n  enabled: true\n  enabled: false\n'],
  ])('refuses %s', (_name, text) => {
    const file = path.join(temp.dir, 'bad.yaml');
    writeFileSync(file, text);
    expect(() => loadConfigFile(file, {})).toThrow(ConfigError);
  });

  it('refuses a missing file', () => {
    expect(() => loadConfigFile(path.join(temp.dir, 'missing.yaml'), {})).toThrow(ConfigError);
  });
});

describe('hooks path normalisation', () => {
  it.each([
    ['/hooks', '/hooks'],
    ['hooks', '/hooks'],
    ['/hooks/', '/hooks'],
    ['/api/hooks//', '/api/hooks'],
    ['/', null],
    ['', null],
    ['/a b', null],
  ])('%j -> %j', (raw, expected) => {
    expect(normaliseHooksPath(raw)).toBe(expected);
  });

  test.prop([fc.string()])(
    'a normalised path is absolute, has no trailing slash and is stable',
    (raw) => {
      const once = normaliseHooksPath(raw);
      if (once === null) return;
      expect(once.startsWith('/')).toBe(true);
      expect(once.endsWith('/')).toBe(false);
      expect(once.length).toBeGreaterThan(1);
      expect(normaliseHooksPath(once)).toBe(once);
    },
  );
});

describe('${VAR} inside YAML flow mappings', () => {
  const temp = tempDir();
  afterAll(() => temp.cleanup());

  it('loads `{ botToken: ${TOKEN} }` as written in the docs', () => {
    const file = path.join(temp.dir, 'flow.yaml');
    writeFileSync(
      file,
      'hooks: { enabled: true, token: ${HOOKS_TOKEN} }\nchannels:\n  telegram: { botToken: ${TELEGRAM_BOT_TOKEN}, baseUrl: "http://127.0.0.1:9" }\n',
    );
    const loaded = loadConfigFile(file, { HOOKS_TOKEN: 'h', TELEGRAM_BOT_TOKEN: '123:abc' });
    expect(loaded.config.hooks.token).toBe('h');
    expect(loaded.config.channels.telegram?.botToken).toBe('123:abc');
  });

  it('never lets a value add YAML structure', () => {
    const file = path.join(temp.dir, 'inject.yaml');
    writeFileSync(file, 'hooks: { enabled: true, token: ${T} }\n');
    const loaded = loadConfigFile(file, { T: 'x, enabled: false }' });
    expect(loaded.config.hooks.enabled).toBe(true);
    expect(loaded.config.hooks.token).toBe('x, enabled: false }');
  });

  it('keeps $${ as a literal in a file', () => {
    const file = path.join(temp.dir, 'literal.yaml');
    writeFileSync(file, 'hooks:\n  enabled: true\n  token: t\n  defaultSessionKey: "hook:$${x}"\n');
    expect(loadConfigFile(file, {}).config.hooks.defaultSessionKey).toBe('hook:${x}');
  });
});

describe('tokens a request can present', () => {
  it.each(['t0ken', 'a b c', '~!#$%&*+-./:;<=>?@[]^_`{|}'])('accepts %j', (token) => {
    expect(resolveConfig(enabled({ token }), base).config.hooks.token).toBe(token);
  });
});
