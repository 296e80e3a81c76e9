/**
 * The README's headline GitHub mapping, used as a config, accepts a delivery
 * shaped like GitHub's own push webhook (no `source` field, the event in the
 * X-GitHub-Event header, Content type application/json).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AgentAction } from '../schemas/action.ts';
import { CHANNELS, startTestServer, type TestServer } from './helpers/hookgate.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const section = readme.split('\n## Mapped hooks')[1] ?? '';
const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
const push = readFileSync(new URL('./fixtures/github-push.json', import.meta.url), 'utf8');

describe("the README's GitHub mapping", () => {
  let server: TestServer;
  beforeAll(async () => {
    const { hooks } = parse(block) as { hooks: Record<string, unknown> };
    server = await startTestServer({
      channels: CHANNELS,
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      hooks,
    });
  });
  afterAll(() => server.stop());

  it('is the github-push mapping without a source match', () => {
    expect(block).toContain('id: github-push');
    expect(block).not.toMatch(/^\s*source:/m);
  });

  it('accepts a real-shaped GitHub push delivery', async () => {
    const payload = JSON.parse(push) as { source?: unknown; head_commit: { message: string } };
    expect(payload.source).toBeUndefined();
    const res = await server.post('github', push, {
      headers: { 'x-github-event': 'push', 'x-github-delivery': 'a1b2c3' },
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(200);
    expect(body['sessionKey']).toBe('hook:github:octocat@hello-world');
    expect(body['agentId']).toBe('ops');
    const rows = await server.store.listActions({ limit: 10 });
    const action = rows.find((row) => row.action.id === body['runId'])?.action as AgentAction;
    expect(action.message).toBe(
      `Push to octocat/hello-world by octocat: ${payload.head_commit.message}`,
    );
  });

  it('answers 204 for another GitHub event on the same path', async () => {
    const res = await server.post('github', push, { headers: { 'x-github-event': 'issues' } });
    expect(res.status).toBe(204);
  });

  it("refuses GitHub's form-encoded content type with 400 invalid_json", async () => {
    const res = await server.post('github', `payload=${encodeURIComponent(push)}`, {
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-github-event': 'push',
      },
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });
});
