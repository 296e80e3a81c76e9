/**
 * Mappings at boot: every static problem is a ConfigError naming the path
 * and the mapping id; presets come after user mappings.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../engine/config.ts';
import { compileMappings } from '../engine/mappings.ts';
import { policyFromConfig } from '../engine/policy.ts';

function compile(hooks: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const { config } = resolveConfig(
    { ...extra, hooks: { enabled: true, token: 't', ...hooks } },
    { baseDir: '/tmp', env: {} },
  );
  return compileMappings(config, policyFromConfig(config), '/tmp/no-transforms-here');
}

function bootError(hooks: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  try {
    compile(hooks, extra);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('accepted');
}

const m = (fields: Record<string, unknown>) => ({
  mappings: [{ id: 'm1', match: { path: 'x' }, message: 'hi', ...fields }],
});

describe('boot errors', () => {
  it.each([
    [
      'template syntax',
      m({ templates: { message: '{{oops' } }),
      'hooks.mappings.0.templates.message: (mapping "m1")',
    ],
    [
      'sessionKeyWhenEmpty on a fixed sessionKey',
      m({ sessionKey: 'hook:fixed', sessionKeyWhenEmpty: 'default' }),
      'hooks.mappings.0.sessionKeyWhenEmpty: (mapping "m1") applies only to a templated sessionKey',
    ],
    [
      'a helper without its value (it rendered Handlebars\' options, the whole input with them)',
      m({ templates: { message: 'all: {{json}}' } }),
      'hooks.mappings.0.templates.message: (mapping "m1") helper "json" needs 1 value, given 0',
    ],
    [
      'default without its fallback',
      m({ templates: { name: '{{default payload.name}}' } }),
      'hooks.mappings.0.templates.name: (mapping "m1") helper "default" needs 2 values, given 1',
    ],
    [
      'unknown helper',
      m({ templates: { name: '{{shout x}}' } }),
      'hooks.mappings.0.templates.name',
    ],
    [
      'a partial in a template',
      m({ templates: { message: '{{> header}}' } }),
      'hooks.mappings.0.templates.message: (mapping "m1") partials',
    ],
    [
      'a growing reduce in a condition',
      m({
        match: {
          path: 'x',
          when: { reduce: [{ var: 'payload.a' }, { cat: [{ var: 'accumulator' }, 'x'] }, ''] },
        },
      }),
      'hooks.mappings.0.match.when.reduce.1: (mapping "m1")',
    ],
    [
      'unknown operator',
      m({ match: { path: 'x', when: { regex: [1] } } }),
      'hooks.mappings.0.match.when: (mapping "m1") unknown operator',
    ],
    [
      'forbidden path',
      m({ match: { path: 'x', when: { var: 'payload.__proto__' } } }),
      'hooks.mappings.0.match.when.var',
    ],
    [
      'un-namespaced key template',
      m({ templates: { sessionKey: '{{id}}' } }),
      'hooks.mappings.0.templates.sessionKey',
    ],
    [
      'key namespace outside prefixes',
      { ...m({ templates: { sessionKey: 'other:{{id}}' } }), allowedSessionKeyPrefixes: ['hook:'] },
      'hooks.allowedSessionKeyPrefixes',
    ],
    [
      'static key outside prefixes',
      { ...m({ sessionKey: 'main' }), allowedSessionKeyPrefixes: ['hook:'] },
      'hooks.mappings.0.sessionKey',
    ],
    [
      'built-in path',
      { mappings: [{ match: { path: 'wake' }, text: 'x', action: 'wake' }] },
      'hooks.mappings.0.match.path',
    ],
    [
      'duplicate ids',
      {
        mappings: [
          { id: 'a', message: 'x' },
          { id: 'a', message: 'y' },
        ],
      },
      'hooks.mappings.1.id',
    ],
    [
      'no message',
      { mappings: [{ id: 'a', match: { path: 'x' } }] },
      'hooks.mappings.0.templates.message',
    ],
    ['no text for wake', { mappings: [{ id: 'a', action: 'wake' }] }, 'templates.text'],
    [
      'alias and template',
      m({ messageTemplate: 'a', templates: { message: 'b' } }),
      'hooks.mappings.0.messageTemplate',
    ],
    ['unknown preset', { presets: ['outlook'] }, 'hooks.presets.0: unknown preset "outlook"'],
    [
      'transform not yet supported',
      m({ transform: { module: 'x.ts' } }),
      'hooks.mappings.0.transform',
    ],
    ['unknown mapping key', m({ colour: 'red' }), 'hooks.mappings.0.colour: unknown setting'],
    [
      'transformsDir outside the root, even unused',
      { transformsDir: '../evil' },
      'hooks.transformsDir',
    ],
    ['absolute transformsDir, even unused', { transformsDir: '/etc' }, 'hooks.transformsDir'],
    ['bad action', m({ action: 'run' }), 'hooks.mappings.0.action'],
    [
      'a timeoutSeconds above hooks.maxTimeoutSeconds (every request would be refused for it)',
      { ...m({ timeoutSeconds: 120 }), maxTimeoutSeconds: 60 },
      'hooks.mappings.0.timeoutSeconds: (mapping "m1") must be at most 60 (hooks.maxTimeoutSeconds)',
    ],
  ])('%s', (_name, hooks, expected) => {
    expect(bootError(hooks)).toContain(expected);
  });

  it('blames hooks.gmail.model for a gmail preset model outside the model list', () => {
    const extra = { agents: { defaults: { models: { 'a/b': {} } } } };
    expect(bootError({ presets: ['gmail'], gmail: { model: 'x/y' } }, extra)).toContain(
      'hooks.gmail.model',
    );
  });

  it.each([
    ['agent not allowed', m({ agentId: 'qa' }), 'hooks.mappings.0.agentId'],
    ['model not allowed', m({ model: 'x/y' }), 'hooks.mappings.0.model'],
    ['channel not configured', m({ channel: 'discord' }), 'hooks.mappings.0.channel'],
  ])('static policy: %s', (_name, hooks, expected) => {
    const extra = {
      agents: { list: [{ id: 'main' }, { id: 'qa' }], defaults: { models: { 'a/b': {} } } },
    };
    expect(bootError({ ...hooks, allowedAgentIds: ['main'] }, extra)).toContain(expected);
  });
});

describe('render bounds', () => {
  it('default to 256 KiB per field and action and 1 MiB per request', () => {
    const { config } = resolveConfig({}, { baseDir: '/tmp', env: {} });
    expect(config.hooks).toMatchObject({
      maxRenderedFieldBytes: 262_144,
      maxRenderedActionBytes: 262_144,
      maxRenderedRequestBytes: 1_048_576,
    });
  });

  it('refuses a bound below 1 KiB at boot, naming the setting', () => {
    expect(() =>
      resolveConfig({ hooks: { maxRenderedFieldBytes: 10 } }, { baseDir: '/tmp', env: {} }),
    ).toThrow(/hooks\.maxRenderedFieldBytes/);
  });
});

describe('order and defaults', () => {
  it('puts user mappings first, then presets, with default ids', () => {
    const mappings = compile({
      presets: ['gmail'],
      mappings: [{ message: 'a' }, { id: 'named', message: 'b' }],
    });
    expect(mappings.map((x) => x.id)).toEqual(['mapping-1', 'named', 'gmail']);
    expect(mappings.map((x) => x.kind)).toEqual(['agent', 'agent', 'agent']);
  });

  it('drops a preset whose path a user mapping claims', () => {
    const mappings = compile({
      presets: ['gmail'],
      mappings: [{ id: 'mine', match: { path: 'gmail' }, message: 'a' }],
    });
    expect(mappings.map((x) => x.id)).toEqual(['mine']);
  });

  it('accepts OpenClaw-style messageTemplate and textTemplate', () => {
    const mappings = compile({
      mappings: [
        { id: 'a', messageTemplate: 'Hi {{name}}' },
        { id: 'b', action: 'wake', textTemplate: 'Hi {{name}}' },
      ],
    });
    expect(typeof mappings[0]?.fields.message).toBe('function');
    expect(typeof mappings[1]?.fields.text).toBe('function');
  });
});
