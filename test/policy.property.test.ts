/**
 * Properties of the policy decisions (agent allowlist, session keys, models,
 * channels): pure functions checked over generated configs and requests.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { HookError } from '../engine/errors.ts';
import { type Policy, resolveAgentId, resolveModel, resolveSessionKey } from '../engine/policy.ts';
import { isWellFormedSessionKey } from '../engine/session-key.ts';

const agentId = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);

function basePolicy(overrides: Partial<Policy>): Policy {
  return {
    agentIds: new Set(['main']),
    defaultAgentId: 'main',
    allowedAgentIds: undefined,
    allowRequestSessionKey: false,
    allowedSessionKeyPrefixes: undefined,
    defaultSessionKey: undefined,
    allowedModels: null,
    modelAliases: new Map(),
    channels: new Set(),
    recipientChecks: new Map(),
    allowedRecipients: undefined,
    ...overrides,
  };
}

function outcome<T>(fn: () => T): { ok: true; value: T } | { ok: false; code: string } {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    if (!(err instanceof HookError)) throw err;
    return { ok: false, code: err.code };
  }
}

const agentsArb = fc.uniqueArray(agentId, { minLength: 1, maxLength: 5 });
const allowlistArb = fc.option(fc.array(fc.oneof(agentId, fc.constant('*')), { maxLength: 4 }), {
  nil: undefined,
});

describe('agent allowlist', () => {
  test.prop([agentsArb, allowlistArb, fc.option(agentId, { nil: undefined })])(
    'the resolved agent is always a configured agent, and allowed unless refused',
    (agents, allowed, requested) => {
      const policy = basePolicy({
        agentIds: new Set(agents),
        defaultAgentId: agents[0] as string,
        allowedAgentIds: allowed,
      });
      const result = outcome(() => resolveAgentId(policy, requested));
      if (result.ok) {
        expect(agents).toContain(result.value);
        if (requested !== undefined && allowed !== undefined && !allowed.includes('*')) {
          expect(allowed).toContain(result.value);
        }
      } else {
        expect(result.code).toBe('agent_not_allowed');
        expect(requested).toBeDefined();
      }
    },
  );

  test.prop([agentsArb, allowlistArb])(
    'no agentId always resolves to the default agent',
    (agents, allowed) => {
      const policy = basePolicy({
        agentIds: new Set(agents),
        defaultAgentId: agents[0] as string,
        allowedAgentIds: allowed,
      });
      expect(resolveAgentId(policy, undefined)).toBe(agents[0]);
    },
  );

  test.prop([agentsArb, fc.option(agentId, { nil: undefined })])(
    'omitted or "*" allowlists never refuse',
    (agents, requested) => {
      for (const allowed of [undefined, ['*']]) {
        const policy = basePolicy({
          agentIds: new Set(agents),
          defaultAgentId: agents[0] as string,
          allowedAgentIds: allowed,
        });
        expect(outcome(() => resolveAgentId(policy, requested)).ok).toBe(true);
      }
    },
  );

  test.prop([agentsArb, agentId])(
    'an empty allowlist refuses every explicit agentId',
    (agents, requested) => {
      const policy = basePolicy({
        agentIds: new Set(agents),
        defaultAgentId: agents[0] as string,
        allowedAgentIds: [],
      });
      expect(outcome(() => resolveAgentId(policy, requested))).toEqual({
        ok: false,
        code: 'agent_not_allowed',
      });
    },
  );

  test.prop([agentsArb, agentId])(
    'unknown ids are judged as the default agent',
    (agents, requested) => {
      fc.pre(!agents.includes(requested));
      const main = agents[0] as string;
      const allowsDefault = basePolicy({
        agentIds: new Set(agents),
        defaultAgentId: main,
        allowedAgentIds: [main],
      });
      expect(resolveAgentId(allowsDefault, requested)).toBe(main);
      const refusesDefault = basePolicy({
        agentIds: new Set(agents),
        defaultAgentId: main,
        allowedAgentIds: agents.slice(1),
      });
      expect(outcome(() => resolveAgentId(refusesDefault, requested)).ok).toBe(false);
    },
  );
});

const prefixArb = fc.constantFrom('hook:', 'hook:github:', 'ci:', 'h');
const keyArb = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.tuple(prefixArb, fc.string({ maxLength: 12 })).map(([p, s]) => p + s),
  fc.string({ minLength: 250, maxLength: 300 }),
);

describe('session keys', () => {
  test.prop([
    fc.boolean(),
    fc.option(fc.array(prefixArb, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    keyArb,
  ])(
    'a request key is honoured only when enabled, well-formed and prefixed',
    (allow, prefixes, key) => {
      const policy = basePolicy({
        allowRequestSessionKey: allow,
        allowedSessionKeyPrefixes: prefixes,
      });
      const result = outcome(() =>
        resolveSessionKey(policy, { key, source: 'request' }, () => 'id'),
      );
      const prefixed = prefixes === undefined || prefixes.some((p) => key.startsWith(p));
      const expectedOk = allow && isWellFormedSessionKey(key) && prefixed;
      expect(result.ok).toBe(expectedOk);
      if (result.ok) expect(result.value).toEqual({ sessionKey: key, source: 'request' });
      else if (!allow) expect(result.code).toBe('session_key_not_allowed');
      else if (!isWellFormedSessionKey(key)) expect(result.code).toBe('invalid_session_key');
      else expect(result.code).toBe('session_key_not_allowed');
    },
  );

  test.prop([fc.option(prefixArb, { nil: undefined }), keyArb])(
    'a mapping key needs no opt-in but obeys the prefixes',
    (prefix, key) => {
      const policy = basePolicy({
        allowedSessionKeyPrefixes: prefix === undefined ? undefined : [prefix],
      });
      const result = outcome(() =>
        resolveSessionKey(policy, { key, source: 'mapping' }, () => 'id'),
      );
      const expectedOk =
        isWellFormedSessionKey(key) && (prefix === undefined || key.startsWith(prefix));
      expect(result.ok).toBe(expectedOk);
    },
  );

  test.prop([fc.option(fc.constantFrom('hook:ingress', 'hook:x'), { nil: undefined }), fc.uuid()])(
    'without a key: the default, else a fresh hook:<uuid>',
    (defaultKey, uuid) => {
      const policy = basePolicy({ defaultSessionKey: defaultKey });
      const result = resolveSessionKey(policy, undefined, () => uuid);
      if (defaultKey) expect(result).toEqual({ sessionKey: defaultKey, source: 'default' });
      else expect(result).toEqual({ sessionKey: `hook:${uuid}`, source: 'generated' });
    },
  );
});

describe('models', () => {
  const modelId = fc
    .tuple(fc.stringMatching(/^[a-z]{1,6}$/), fc.stringMatching(/^[a-z0-9.-]{1,8}$/))
    .map(([p, m]) => `${p}/${m}`);

  test.prop([fc.uniqueArray(modelId, { minLength: 1, maxLength: 4 }), modelId])(
    'with a model list, only listed models (or their aliases) pass',
    (models, requested) => {
      const policy = basePolicy({
        allowedModels: new Set(models),
        modelAliases: new Map([['alias', models[0] as string]]),
      });
      const result = outcome(() => resolveModel(policy, requested));
      expect(result.ok).toBe(models.includes(requested));
      expect(resolveModel(policy, 'alias')).toBe(models[0]);
    },
  );

  test.prop([fc.uniqueArray(modelId, { minLength: 1, maxLength: 4 }), fc.string()])(
    'with a model list, anything else is 403 whatever its form (no slash, an alias in another case)',
    (models, requested) => {
      const policy = basePolicy({
        allowedModels: new Set(models),
        modelAliases: new Map([['mini', models[0] as string]]),
      });
      fc.pre(requested !== 'mini' && !models.includes(requested));
      for (const asked of [requested, 'MINI', 'gpt-4']) {
        let code: string | undefined;
        try {
          resolveModel(policy, asked);
        } catch (err) {
          code = (err as HookError).code;
        }
        expect(code).toBe('model_not_allowed');
      }
    },
  );

  test.prop([modelId])('without a model list any <provider>/<model> passes', (requested) => {
    expect(resolveModel(basePolicy({}), requested)).toBe(requested);
  });
});
