/**
 * End-to-end: mapped hooks over real HTTP: path and source matching, `when`
 * conditions on headers and payload, first-match order, presets and their
 * override, fan-out, session keys, every outcome status, golden fixtures.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAction, WakeAction } from '../schemas/action.ts';
import { CHANNELS, startTestServer, type TestServer } from './helpers/hookgate.ts';
import { unwrap } from './helpers/wrapped.ts';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;

type Body = Record<string, unknown> & { error?: { code: string; message: string } };

async function send(
  server: TestServer,
  hook: string,
  payload: unknown,
  headers: Record<string, string> = {},
  query = '',
): Promise<{ status: number; body: Body | null }> {
  const res = query
    ? await fetch(`${server.url}/hooks/${hook}?${query}`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-hook-token-0123456789', ...headers },
        body: JSON.stringify(payload),
      })
    : await server.post(hook, payload, { headers });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Body) : null };
}

async function actionById(server: TestServer, id: string) {
  const rows = await server.store.listActions({ limit: 10_000 });
  return rows.find((row) => row.action.id === id)?.action;
}

const count = async (server: TestServer) =>
  (await server.store.listActions({ limit: 100_000 })).length;

describe('mapped hooks', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      channels: CHANNELS,
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      hooks: {
        allowedSessionKeyPrefixes: ['hook:'],
        presets: ['gmail'],
        mappings: [
          {
            id: 'github-push',
            match: {
              path: 'github',
              when: { '==': [{ var: 'headers.x-github-event' }, 'push'] },
            },
            action: 'agent',
            templates: {
              message:
                'Push to {{payload.repository.full_name}} by {{pusher.name}}: {{join (lookup payload "commits") ", "}}',
              sessionKey: 'hook:github:{{payload.repository.id}}',
            },
            name: 'GitHub',
            agentId: 'ops',
            channel: 'slack',
            to: 'C0123456789',
            deliver: true,
          },
          {
            id: 'github-other',
            match: { path: 'github' },
            action: 'wake',
            textTemplate: 'GitHub {{headers.x-github-event}} event on {{repository.full_name}}',
            mode: 'next-heartbeat',
          },
          {
            id: 'stripe-failed',
            match: {
              path: 'stripe',
              when: {
                and: [
                  { '==': [{ var: 'payload.type' }, 'invoice.payment_failed'] },
                  { '>=': [{ var: 'payload.data.object.attempt_count' }, 2] },
                ],
              },
            },
            messageTemplate:
              'Payment failed for {{data.object.customer_name}} ({{data.object.customer_email}}): {{data.object.amount_due}} {{upper data.object.currency}}',
            sessionKey: 'hook:stripe:billing',
            name: 'Stripe',
          },
          {
            id: 'ingest-ci',
            match: { path: 'ingest', source: 'ci' },
            action: 'wake',
            templates: { text: 'CI: {{status}} for {{default branch "main"}}' },
          },
          {
            id: 'ingest-monitor',
            match: {
              path: 'ingest',
              source: 'monitor',
              when: { '==': [{ var: 'query.env' }, 'prod'] },
            },
            templates: {
              message: 'Alert {{alert}} ({{query.env}})',
              sessionKey: 'hook:monitor:{{alert}}',
            },
          },
          {
            id: 'commits',
            match: { path: 'commits' },
            forEach: 'commits',
            templates: {
              message: 'Commit {{item.id}} #{{index}}: {{item.message}}',
              sessionKey: 'hook:commit:{{item.id}}',
            },
          },
          {
            id: 'trusted',
            match: { path: 'internal' },
            action: 'wake',
            text: 'Internal ping',
            allowUnsafeExternalContent: true,
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  it('matches path and header condition, renders templates and applies static values', async () => {
    const payload = fixture('github-push.json');
    const { status, body } = await send(server, 'github', payload, { 'x-github-event': 'push' });
    expect(status).toBe(200);
    expect(body).toEqual({
      ok: true,
      runId: expect.any(String),
      agentId: 'ops',
      sessionKey: 'hook:github:1296269',
    });
    const action = (await actionById(server, body?.['runId'] as string)) as AgentAction;
    expect(action).toMatchObject({
      kind: 'agent',
      hook: 'github',
      mappingId: 'github-push',
      name: 'GitHub',
      agentId: 'ops',
      channel: 'slack',
      to: 'C0123456789',
      deliver: true,
      sessionKeySource: 'mapping',
      untrusted: true,
    });
    expect(unwrap(action.prompt as string)).toMatchObject({ label: 'Webhook' });
    expect(unwrap(action.prompt as string).content).toMatch(
      /^Push to octocat\/hello-world by octocat: /,
    );
  });

  it('falls through to the next mapping when a condition fails (first match wins)', async () => {
    const { status, body } = await send(server, 'github', fixture('github-push.json'), {
      'x-github-event': 'issues',
    });
    expect(status).toBe(200);
    const action = (await actionById(server, body?.['id'] as string)) as WakeAction;
    expect(action).toMatchObject({
      kind: 'wake',
      mode: 'next-heartbeat',
      mappingId: 'github-other',
    });
    expect(unwrap(action.prompt as string).content).toBe(
      'GitHub issues event on octocat/hello-world',
    );
    expect(body).toEqual({ ok: true, id: action.id, mode: 'next-heartbeat' });
  });

  it('evaluates payload conditions (golden Stripe fixture)', async () => {
    const { status, body } = await send(server, 'stripe', fixture('stripe-invoice-failed.json'));
    expect(status).toBe(200);
    const action = (await actionById(server, body?.['runId'] as string)) as AgentAction;
    expect(unwrap(action.prompt as string).content).toBe(
      'Payment failed for Jenny Rosen (jenny.rosen@example.com): 4900 EUR',
    );
    expect(action.sessionKey).toBe('hook:stripe:billing');
    expect(action.name).toBe('Stripe');
  });

  it('answers 204 and stores nothing when mappings exist for the name but none match', async () => {
    const before = await count(server);
    const event = fixture('stripe-invoice-failed.json');
    const { status, body } = await send(server, 'stripe', { ...event, type: 'invoice.paid' });
    expect(status).toBe(204);
    expect(body).toBeNull();
    expect(await count(server)).toBe(before);
  });

  it('answers 404 unknown_hook when no mapping could ever match the name', async () => {
    const { status, body } = await send(server, 'gitlab', { a: 1 });
    expect(status).toBe(404);
    expect(body?.error?.code).toBe('unknown_hook');
  });

  it.each([
    ['ci', { source: 'ci', status: 'green' }, 200, 'ingest-ci', ''],
    [
      'monitor in prod',
      { source: 'monitor', alert: 'disk-full' },
      200,
      'ingest-monitor',
      'env=prod',
    ],
    ['monitor outside prod', { source: 'monitor', alert: 'disk-full' }, 204, undefined, 'env=dev'],
    ['unknown source', { source: 'other' }, 204, undefined, ''],
    ['no source', { status: 'green' }, 204, undefined, ''],
  ])(
    'generic ingest routes by payload.source: %s',
    async (_name, payload, status, mappingId, query) => {
      const res = await send(server, 'ingest', payload, {}, query);
      expect(res.status).toBe(status);
      if (mappingId) {
        const id = (res.body?.['id'] ?? res.body?.['runId']) as string;
        expect((await actionById(server, id))?.mappingId).toBe(mappingId);
      }
    },
  );

  it('renders default values and query parameters', async () => {
    const ci = await send(server, 'ingest', { source: 'ci', status: 'red' });
    expect(
      unwrap(((await actionById(server, ci.body?.['id'] as string)) as WakeAction).prompt as string)
        .content,
    ).toBe('CI: red for main');
    const monitor = await send(
      server,
      'ingest',
      { source: 'monitor', alert: 'cpu' },
      {},
      'env=prod',
    );
    const action = (await actionById(server, monitor.body?.['runId'] as string)) as AgentAction;
    expect(unwrap(action.prompt as string).content).toBe('Alert cpu (prod)');
    expect(action.sessionKey).toBe('hook:monitor:cpu');
  });

  it('fans out one action per element, atomically, with plural ids', async () => {
    const payload = fixture('github-push.json');
    const before = await count(server);
    const { status, body } = await send(server, 'commits', payload);
    expect(status).toBe(200);
    const runIds = body?.['runIds'] as string[];
    expect(runIds).toHaveLength(2);
    expect(body?.['sessionKeys']).toEqual([
      'hook:commit:0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
      'hook:commit:a3f1e5c2b9d84e7f6a1b2c3d4e5f60718293a4b5',
    ]);
    expect(await count(server)).toBe(before + 2);
    const second = (await actionById(server, runIds[1] as string)) as AgentAction;
    expect(unwrap(second.prompt as string).content).toBe(
      'Commit a3f1e5c2b9d84e7f6a1b2c3d4e5f60718293a4b5 #1: Bump version to 1.4.2',
    );
  });

  it('stores nothing when one element of a fan-out is refused', async () => {
    const before = await count(server);
    const { status, body } = await send(server, 'commits', {
      commits: [
        { id: 'good', message: 'ok' },
        { id: 'bad:key', message: 'x' },
      ],
    });
    expect(status).toBe(400);
    expect(body?.error?.code).toBe('invalid_session_key');
    expect(body?.error?.message).toContain('commits');
    expect(await count(server)).toBe(before);
  });

  it('answers 204 for an empty fan-out', async () => {
    expect((await send(server, 'commits', { commits: [] })).status).toBe(204);
  });

  it('refuses a fan-out path that is not an array', async () => {
    const { status, body } = await send(server, 'commits', { commits: 'nope' });
    expect(status).toBe(400);
    expect(body?.error?.message).toContain('commits');
  });

  it.each([
    ['a colon', 'a:b'],
    ['a space', 'a b'],
    ['a slash', 'a/b'],
    ['an empty value', ''],
  ])(
    'refuses a templated session-key value with %s (400 invalid_session_key)',
    async (_name, alert) => {
      const { status, body } = await send(
        server,
        'ingest',
        { source: 'monitor', alert },
        {},
        'env=prod',
      );
      expect(status).toBe(400);
      expect(body?.error?.code).toBe('invalid_session_key');
    },
  );

  it.each([
    ['blank', '   '],
    ['empty', ''],
    ['zero-width and tag characters alone', '\u200b\u2060\u{e0041}'],
  ])(
    'refuses a %s rendered message with 400 naming the mapping and the field',
    async (_name, text) => {
      const empty = await startTestServer({
        hooks: {
          mappings: [{ id: 'echo', match: { path: 'echo' }, templates: { message: '{{text}}' } }],
        },
      });
      try {
        const res = await send(empty, 'echo', { text });
        expect(res.status).toBe(400);
        expect(res.body?.error?.code).toBe('invalid_payload');
        expect(res.body?.error?.message).toContain('echo');
        expect(res.body?.error?.message).toContain('message: rendered empty');
        expect(await count(empty)).toBe(0);
      } finally {
        await empty.stop();
      }
    },
  );

  it('does not wrap the text of a mapping with allowUnsafeExternalContent', async () => {
    const { body } = await send(server, 'internal', {});
    const action = (await actionById(server, body?.['id'] as string)) as WakeAction;
    expect(action.text).toBe('Internal ping');
    expect(action.untrusted).toBe(false);
    expect(action.safety).toBeUndefined();
  });

  it('runs the gmail preset: one run per message, own session, Email label, injection neutralised', async () => {
    const payload = fixture('gmail-batch.json');
    const { status, body } = await send(server, 'gmail', payload);
    expect(status).toBe(200);
    expect(body?.['sessionKeys']).toEqual([
      'hook:gmail:18c2f4a9b3e1d7aa',
      'hook:gmail:18c2f4b0c41e2bb9',
      'hook:gmail:18c2f4b7a0d93cc1',
    ]);
    const actions = await Promise.all(
      ((body?.['runIds'] as string[] | undefined) ?? []).map((id) => actionById(server, id)),
    );
    for (const action of actions as AgentAction[]) {
      expect(action).toMatchObject({
        name: 'Gmail',
        mappingId: 'gmail',
        deliver: true,
        wakeMode: 'now',
      });
      expect(unwrap(action.prompt as string).label).toBe('Email');
    }
    const first = unwrap((actions[0] as AgentAction).prompt as string).content;
    expect(first).toContain('New email from Ada Lovelace <ada@example.org>');
    expect(first).toContain('Subject: Quarterly numbers');
    expect(first).toContain('the Q3 numbers are attached');
    expect(first).toContain('Best,\nAda');
    const hostile = actions[1] as AgentAction;
    expect(unwrap(hostile.prompt as string).content).not.toContain(
      '<<<END_EXTERNAL_UNTRUSTED_CONTENT',
    );
    expect(hostile.safety?.patterns).toEqual(
      expect.arrayContaining([
        'ignore-previous-instructions',
        'data-exfiltration',
        'fake-system-message',
      ]),
    );
  });

  it("runs the gmail preset on messages without an id (the contract's example shape), each in a session of its own", async () => {
    const payload = {
      source: 'gmail',
      messages: [
        { from: 'Ada <ada@example.org>', subject: 'Numbers', snippet: 'attached' },
        { from: 'Bob <bob@example.org>', subject: 'Lunch', snippet: 'noon?' },
        { id: '18c2f4a9b3e1d7ff', from: 'Cy <cy@example.org>', subject: 'Hi' },
      ],
    };
    const { status, body } = await send(server, 'gmail', payload);
    expect(status).toBe(200);
    const keys = body?.['sessionKeys'] as string[];
    expect(keys[2]).toBe('hook:gmail:18c2f4a9b3e1d7ff');
    // No id: the session a run without a key gets (no hooks.defaultSessionKey here: a new one).
    expect(keys[0]).toMatch(/^hook:[0-9a-f-]{36}$/);
    expect(keys[1]).toMatch(/^hook:[0-9a-f-]{36}$/);
    expect(keys[0]).not.toBe(keys[1]);
    const ids = body?.['runIds'] as string[];
    const first = (await actionById(server, ids[0] as string)) as AgentAction;
    expect(first).toMatchObject({ sessionKey: keys[0], sessionKeySource: 'generated' });
    expect(unwrap(first.prompt as string).content).toContain(
      'New email from Ada <ada@example.org>',
    );
  });

  it('keeps the built-in /wake and /agent ahead of mappings', async () => {
    expect((await send(server, 'wake', { text: 'still here' })).status).toBe(200);
  });
});

describe('sessionKeyWhenEmpty', () => {
  it("default: a request without the key's value runs in hooks.defaultSessionKey; with it, in its own", async () => {
    const server = await startTestServer({
      hooks: {
        defaultSessionKey: 'hook:ingress',
        mappings: [
          {
            id: 'alerts',
            match: { path: 'alerts' },
            action: 'agent',
            sessionKeyWhenEmpty: 'default',
            templates: {
              message: 'alert {{name}}',
              sessionKey: 'hook:alert:{{payload.group}}-{{payload.zone}}',
            },
          },
        ],
      },
    });
    try {
      const without = await send(server, 'alerts', { name: 'disk' });
      expect(without.status).toBe(200);
      expect(without.body?.['sessionKey']).toBe('hook:ingress');
      const keyed = await send(server, 'alerts', { name: 'cpu', group: 'db', zone: 'eu' });
      expect(keyed.body?.['sessionKey']).toBe('hook:alert:db-eu');
      // Only emptiness falls back: a value the key cannot hold is still refused, also beside an
      // empty one.
      for (const fields of [{ group: 'a:b', zone: 'eu' }, { zone: 'a:b' }]) {
        const unsafe = await send(server, 'alerts', { name: 'x', ...fields });
        expect(unsafe.status).toBe(400);
        expect(unsafe.body?.error?.code).toBe('invalid_session_key');
      }
    } finally {
      await server.stop();
    }
  });
});

describe('presets and overrides', () => {
  it('lets a user mapping for the same path override a preset', async () => {
    const server = await startTestServer({
      hooks: {
        presets: ['gmail'],
        gmail: { allowUnsafeExternalContent: true },
        mappings: [
          {
            id: 'my-mail',
            match: { path: 'gmail' },
            action: 'wake',
            textTemplate: 'Mail: {{messages.length}}',
          },
        ],
      },
    });
    try {
      const { status, body } = await send(server, 'gmail', fixture('gmail-batch.json'));
      expect(status).toBe(200);
      const action = (await actionById(server, body?.['id'] as string)) as WakeAction;
      expect(action.mappingId).toBe('my-mail');
      expect(unwrap(action.prompt as string).content).toBe('Mail: 3');
    } finally {
      await server.stop();
    }
  });

  it('applies hooks.gmail settings to the gmail preset', async () => {
    const server = await startTestServer({
      agents: { defaults: { models: { 'openai/gpt-5-mini': { alias: 'mini' } } } },
      hooks: {
        presets: ['gmail'],
        gmail: { allowUnsafeExternalContent: true, model: 'mini', thinking: 'low' },
      },
    });
    try {
      const { body } = await send(server, 'gmail', fixture('gmail-batch.json'));
      const action = (await actionById(
        server,
        (body?.['runIds'] as string[] | undefined)?.[0] as string,
      )) as AgentAction;
      expect(action).toMatchObject({
        model: 'openai/gpt-5-mini',
        thinking: 'low',
        untrusted: false,
      });
      expect(action.message.startsWith('New email from Ada')).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('caps a fan-out at hooks.maxActionsPerRequest and says so in the answer', async () => {
    const server = await startTestServer({
      hooks: { presets: ['gmail'], maxActionsPerRequest: 2 },
    });
    try {
      const { status, body } = await send(server, 'gmail', fixture('gmail-batch.json'));
      expect(status).toBe(200);
      expect(body?.['runIds']).toHaveLength(2);
      expect(body?.['truncated']).toEqual({ total: 3, accepted: 2 });
      expect(body?.['sessionKeys']).toEqual([
        'hook:gmail:18c2f4a9b3e1d7aa',
        'hook:gmail:18c2f4b0c41e2bb9',
      ]);
      expect(await count(server)).toBe(2);
    } finally {
      await server.stop();
    }
  });
});

describe('mapped policy', () => {
  it('refuses a templated agent outside the allowlist with 403, like /agent', async () => {
    const server = await startTestServer({
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }, { id: 'qa' }] },
      hooks: {
        allowedAgentIds: ['main', 'ops'],
        mappings: [
          {
            id: 'route',
            match: { path: 'route' },
            templates: { message: 'm', agentId: '{{agent}}' },
          },
        ],
      },
    });
    try {
      expect((await send(server, 'route', { agent: 'ops' })).status).toBe(200);
      const refused = await send(server, 'route', { agent: 'qa' });
      expect(refused.status).toBe(403);
      expect(refused.body?.error?.code).toBe('agent_not_allowed');
    } finally {
      await server.stop();
    }
  });

  it('needs no allowRequestSessionKey for a mapping key, but its prefix must be allowed', async () => {
    const server = await startTestServer({
      hooks: {
        allowedSessionKeyPrefixes: ['hook:'],
        mappings: [
          { id: 'keyed', match: { path: 'keyed' }, message: 'm', sessionKey: 'hook:fixed' },
        ],
      },
    });
    try {
      const { status, body } = await send(server, 'keyed', {});
      expect(status).toBe(200);
      expect(body?.['sessionKey']).toBe('hook:fixed');
    } finally {
      await server.stop();
    }
  });
});

describe('optional templated fields', () => {
  it('treats an optional field that renders empty as absent (defaults apply)', async () => {
    const server = await startTestServer({
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      hooks: {
        mappings: [
          {
            id: 'route',
            match: { path: 'route' },
            templates: { message: 'm', agentId: '{{agent}}', name: '{{title}}' },
          },
        ],
      },
    });
    try {
      const { status, body } = await send(server, 'route', {});
      expect(status).toBe(200);
      expect(body?.['agentId']).toBe('main');
      const action = (await actionById(server, body?.['runId'] as string)) as AgentAction;
      expect(action.name).toBe('Hook');
    } finally {
      await server.stop();
    }
  });
});
