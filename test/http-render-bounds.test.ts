/**
 * End-to-end: what a mapping renders is bounded. Amplifying templates, a
 * fan-out of large actions and oversized fields are refused with 400
 * rendered_too_large naming the mapping and the field, and nothing is
 * stored; ordinary requests to the same server keep working.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentAction } from '../schemas/action.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';

type Body = Record<string, unknown> & {
  error?: { code: string; message: string; details?: Record<string, unknown> };
};

async function send(server: TestServer, hook: string, payload: unknown) {
  const res = await server.post(hook, payload);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Body) : null };
}

const stored = async (server: TestServer) =>
  (await server.store.listActions({ limit: 100_000 })).length;

const mappings = [
  {
    id: 'amplify',
    match: { path: 'amplify' },
    action: 'agent',
    templates: {
      message: '{{#each payload.commits}}{{../payload.repository.description}}{{/each}}',
    },
  },
  {
    id: 'fan-out',
    match: { path: 'fan-out' },
    action: 'wake',
    forEach: 'items',
    templates: { text: '{{item.text}} {{payload.shared}}' },
  },
  {
    id: 'two-fields',
    match: { path: 'two-fields' },
    action: 'agent',
    templates: { message: '{{payload.a}}', name: '{{payload.b}}' },
  },
  {
    id: 'keyed',
    match: { path: 'keyed' },
    action: 'agent',
    templates: {
      message: 'Push to {{payload.repository.full_name}} by {{payload.pusher}}',
      sessionKey: 'hook:repo:{{keySegment payload.repository.full_name}}',
    },
  },
];

describe('rendered size bounds', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        allowedSessionKeyPrefixes: ['hook:'],
        maxRenderedFieldBytes: 4096,
        maxRenderedActionBytes: 6144,
        maxRenderedRequestBytes: 16_384,
        mappings,
      },
    });
  });
  afterAll(() => server.stop());

  it('refuses the each amplification (a loop repeating a large value) with 400, storing nothing', async () => {
    const before = await stored(server);
    const commits = Array.from({ length: 2000 }, (_, i) => ({ id: `c${i}` }));
    const { status, body } = await send(server, 'amplify', {
      commits,
      repository: { description: 'd'.repeat(60_000) },
    });
    expect(status).toBe(400);
    expect(body?.error?.code).toBe('rendered_too_large');
    expect(body?.error?.message).toContain('Mapping "amplify"');
    expect(body?.error?.message).toContain('message');
    expect(body?.error?.details).toMatchObject({
      mappingId: 'amplify',
      field: 'message',
      limit: 'field',
      max: 4096,
      setting: 'hooks.maxRenderedFieldBytes',
    });
    expect(await stored(server)).toBe(before);
  });

  it('refuses a single field over the bound in bytes (multi-byte text)', async () => {
    const before = await stored(server);
    // 1,500 characters, 4,500 UTF-8 bytes: under the bound in characters, over it in bytes.
    const { status, body } = await send(server, 'two-fields', { a: '€'.repeat(1500), b: 'n' });
    expect(status).toBe(400);
    expect(body?.error?.details).toMatchObject({ mappingId: 'two-fields', field: 'message' });
    expect(await stored(server)).toBe(before);
  });

  it('refuses an action whose fields together are over the action bound', async () => {
    const before = await stored(server);
    const { status, body } = await send(server, 'two-fields', {
      a: 'a'.repeat(4000),
      b: 'b'.repeat(4000),
    });
    expect(status).toBe(400);
    expect(body?.error?.code).toBe('rendered_too_large');
    expect(body?.error?.details).toMatchObject({
      mappingId: 'two-fields',
      field: 'name',
      limit: 'action',
      setting: 'hooks.maxRenderedActionBytes',
    });
    expect(await stored(server)).toBe(before);
  });

  it('refuses a fan-out whose actions together are over the request bound, storing none of them', async () => {
    const before = await stored(server);
    const items = Array.from({ length: 10 }, (_, i) => ({ text: `item ${i}` }));
    const { status, body } = await send(server, 'fan-out', { items, shared: 's'.repeat(3000) });
    expect(status).toBe(400);
    expect(body?.error?.details).toMatchObject({
      mappingId: 'fan-out',
      field: 'text',
      limit: 'request',
      setting: 'hooks.maxRenderedRequestBytes',
    });
    expect(await stored(server)).toBe(before);
  });

  it('accepts the same mappings with ordinary payloads', async () => {
    const small = await send(server, 'fan-out', {
      items: [{ text: 'one' }, { text: 'two' }],
      shared: 'x',
    });
    expect(small.status).toBe(200);
    expect(small.body?.['ids']).toHaveLength(2);
    const amplify = await send(server, 'amplify', {
      commits: [{ id: 'a' }, { id: 'b' }],
      repository: { description: 'desc;' },
    });
    expect(amplify.status).toBe(200);
  });

  it('renders an interpolated object as JSON and keys a repository name with keySegment', async () => {
    const { status, body } = await send(server, 'keyed', {
      repository: { full_name: 'octocat/hello-world' },
      pusher: { name: 'octocat', email: 'o@example.org' },
    });
    expect(status).toBe(200);
    expect(body?.['sessionKey']).toBe('hook:repo:octocat@hello-world');
    const rows = await server.store.listActions({ limit: 100 });
    const action = rows.find((row) => row.action.id === body?.['runId'])?.action as AgentAction;
    expect(action.message).toBe(
      'Push to octocat/hello-world by {"name":"octocat","email":"o@example.org"}',
    );
  });
});

describe('rendered size bounds on what a transform returns', () => {
  const temp = tempDir();
  let server: TestServer;
  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    // Each action is under the transform's output cap, the array of them is over the request bound.
    writeFileSync(
      path.join(root, 'fan.js'),
      "export default ({ payload }) => Array.from({ length: payload.n }, () => ({ kind: 'wake', text: 'w'.repeat(3000) }));\n",
    );
    server = await startTestServer(
      {
        hooks: {
          maxRenderedActionBytes: 4096,
          maxRenderedRequestBytes: 8192,
          mappings: [{ id: 'fan', match: { path: 'fan' }, transform: { module: 'fan.js' } }],
        },
      },
      { dataDir: temp.dir },
    );
  });
  afterAll(async () => {
    await server.stop();
    temp.cleanup();
  });

  it('refuses a transform fan-out over the request bound, storing none of it', async () => {
    const before = await stored(server);
    const { status, body } = await send(server, 'fan', { n: 5 });
    expect(status).toBe(400);
    expect(body?.error?.details).toMatchObject({
      mappingId: 'fan',
      field: 'text',
      limit: 'request',
    });
    expect(await stored(server)).toBe(before);
    expect((await send(server, 'fan', { n: 2 })).status).toBe(200);
  });
});

describe('condition work bound', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'needle-guard',
            match: {
              path: 'guarded',
              when: {
                some: [
                  { var: 'payload.rows' },
                  { some: [{ var: 'cells' }, { '==': [{ var: '' }, 'needle'] }] },
                ],
              },
            },
            action: 'wake',
            templates: { text: 'needle seen' },
          },
          { id: 'fallback', match: { path: 'guarded' }, action: 'wake', templates: { text: 'ok' } },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  it('a wide payload that exhausts a condition is refused, not steered past it to the next mapping', async () => {
    const before = await stored(server);
    const rows = Array.from({ length: 400 }, (_, i) => ({
      cells: Array.from({ length: 50 }, (_, j) => (i * 50 + j === 19_999 ? 'needle' : 'ab')),
    }));
    const { status, body } = await send(server, 'guarded', { rows });
    expect(status).toBe(400);
    expect(body?.error?.code).toBe('invalid_payload');
    expect(body?.error?.details).toMatchObject({ mappingId: 'needle-guard', field: 'match.when' });
    expect(await stored(server)).toBe(before);
    // A payload the condition can judge still goes its way.
    expect((await send(server, 'guarded', { rows: rows.slice(0, 10) })).status).toBe(200);
  });
});
