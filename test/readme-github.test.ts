/**
 * The README's GitHub examples, used as configs: the headline mapping and the
 * `github` preset accept a delivery shaped like GitHub's own push webhook (no
 * `source` field, the event in the X-GitHub-Event header, signed with the
 * webhook secret in X-Hub-Signature-256). The Stripe and Slack preset configs
 * of the README boot.
 */
import { readFileSync } from 'node:fs';
import { sign } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { resolveConfig } from '../engine/config.ts';
import { compileMappings } from '../engine/mappings.ts';
import { policyFromConfig } from '../engine/policy.ts';
import type { AgentAction } from '../schemas/action.ts';
import { CHANNELS, startTestServer, TOKEN, type TestServer } from './helpers/hookgate.ts';

const SECRET = "It's a Secret to Everybody";
const ENV: Record<string, string> = {
  HOOKS_TOKEN: TOKEN,
  GITHUB_WEBHOOK_SECRET: SECRET,
  STRIPE_WEBHOOK_SECRET: 'whsec_test_secret',
  SLACK_SIGNING_SECRET: '8f742231b10e8888abcd99yyyzzz85a5',
};

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const firstYaml = (text: string) => /```yaml\n([\s\S]*?)```/.exec(text)?.[1] ?? '';
const headline = firstYaml(readme.split('\n## Mapped hooks')[1] ?? '');
const presetBlock = (name: string) => firstYaml(readme.split(`\n#### ${name}\n`)[1] ?? '');
/** A README block's `hooks`, with its `${VAR}`s filled in. */
const hooksOf = (block: string) =>
  (
    parse(block.replace(/\$\{(\w+)\}/g, (_, name: string) => ENV[name] ?? '')) as {
      hooks: Record<string, unknown>;
    }
  ).hooks;
const push = readFileSync(new URL('./fixtures/github-push.json', import.meta.url), 'utf8');

/** GitHub's own headers for a delivery of `body`. */
async function githubHeaders(event: string, body: string): Promise<Record<string, string>> {
  return {
    'x-github-event': event,
    'x-github-delivery': crypto.randomUUID(),
    'x-hub-signature-256': await sign(SECRET, body),
    'user-agent': 'GitHub-Hookshot/readme-test',
  };
}

async function storedAction(server: TestServer, runId: unknown): Promise<AgentAction> {
  const rows = await server.store.listActions({ limit: 10 });
  return rows.find((row) => row.action.id === runId)?.action as AgentAction;
}

describe("the README's GitHub mapping", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      channels: CHANNELS,
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      hooks: hooksOf(headline),
    });
  });
  afterAll(() => server.stop());

  it('is the github-push mapping without a source match, verified by GitHub signature', () => {
    expect(headline).toContain('id: github-push');
    expect(headline).not.toMatch(/^\s*source:/m);
    expect(headline).toMatch(/auth: \{ scheme: github, secret: "\$\{GITHUB_WEBHOOK_SECRET\}" \}/);
    expect(readme).not.toMatch(/put a\s+proxy in front/);
  });

  it('accepts a real-shaped, signed GitHub push delivery', async () => {
    const payload = JSON.parse(push) as { source?: unknown; head_commit: { message: string } };
    expect(payload.source).toBeUndefined();
    const res = await server.post('github', push, { headers: await githubHeaders('push', push) });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(200);
    expect(body['sessionKey']).toBe('hook:github:octocat@hello-world');
    expect(body['agentId']).toBe('ops');
    const action = await storedAction(server, body['runId']);
    expect(action.message).toBe(
      `Push to octocat/hello-world by octocat: ${payload.head_commit.message}`,
    );
  });

  it('answers 204 for another GitHub event on the same path', async () => {
    // A body of its own: a byte-identical signed body would be a replay of the push above.
    const issue = JSON.stringify({ action: 'opened', issue: { number: 1, title: 'A bug' } });
    const res = await server.post('github', issue, {
      headers: await githubHeaders('issues', issue),
    });
    expect(res.status).toBe(204);
  });
});

describe("the README's github preset config", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      agents: { list: [{ id: 'main', default: true }, { id: 'ops' }] },
      hooks: hooksOf(presetBlock('GitHub')),
    });
  });
  afterAll(() => server.stop());

  it('enables the github preset with the secret from the environment', () => {
    const hooks = hooksOf(presetBlock('GitHub'));
    expect(hooks['presets']).toEqual(['github']);
    expect(hooks['github']).toMatchObject({ auth: { secret: SECRET }, agentId: 'ops' });
  });

  it('wakes the agent for a signed push with a one-line summary', async () => {
    const res = await server.post('github', push, { headers: await githubHeaders('push', push) });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(200);
    expect(body['sessionKey']).toBe('hook:github:octocat@hello-world');
    const action = await storedAction(server, body['runId']);
    expect(action.message.split('\n')[0]).toMatch(
      /^octocat\/hello-world: 2 commit\(s\) pushed to refs\/heads\/main by octocat: /,
    );
    expect(action.agentId).toBe('ops');
  });
});

describe("the README's Stripe and Slack preset configs", () => {
  it.each(['Stripe', 'Slack'])('%s boots', (name) => {
    const { config } = resolveConfig(
      { channels: CHANNELS, hooks: hooksOf(presetBlock(name)) },
      { baseDir: '/tmp', env: {} },
    );
    const mappings = compileMappings(config, policyFromConfig(config), '/tmp/no-transforms-here');
    expect(mappings.length).toBeGreaterThan(1);
    expect(mappings.every((m) => m.path === name.toLowerCase())).toBe(true);
  });
});
