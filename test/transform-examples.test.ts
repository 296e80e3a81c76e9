/**
 * The shipped example transforms (transforms/), run as an operator would:
 * copied into the transforms root and wired up as their comments say.
 */
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { AgentAction, WakeAction } from '../schemas/action.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const stripeEvent = JSON.parse(
  readFileSync(path.join(ROOT, 'test/fixtures/stripe-invoice-failed.json'), 'utf8'),
);

function pullRequest(action: string, draft = false) {
  return {
    action,
    number: 42,
    pull_request: {
      title: 'Add rate limiting to the login endpoint',
      body: 'Adds a token bucket per client.',
      draft,
      html_url: 'https://github.example/octocat/hello-world/pull/42',
      user: { login: 'mona' },
      additions: 120,
      deletions: 30,
      changed_files: 4,
      base: { ref: 'main' },
      head: { ref: 'rate-limit' },
    },
    repository: { id: 1296269, full_name: 'octocat/hello-world' },
  };
}

describe('example transforms', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  const post = async (hook: string, payload: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, ...headers },
      body: JSON.stringify(payload),
    });
    const text = await res.text();
    return {
      status: res.status,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : null,
    };
  };
  const stored = async (id: unknown) =>
    (await hookgate.store.listActions({ limit: 100 })).find((row) => row.action.id === id)?.action;

  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    for (const file of ['github-pr-digest.ts', 'stripe-event-summary.js']) {
      copyFileSync(path.join(ROOT, 'transforms', file), path.join(root, file));
    }
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        mappings: [
          {
            id: 'github-pr',
            match: {
              path: 'github',
              when: { '==': [{ var: 'headers.x-github-event' }, 'pull_request'] },
            },
            // As the example's own comment and the README configure it.
            sessionKey: 'hook:github:{{keySegment payload.repository.full_name}}',
            transform: { module: 'github-pr-digest.ts' },
          },
          {
            id: 'stripe',
            match: { path: 'stripe' },
            action: 'wake',
            transform: { module: 'stripe-event-summary.js', export: 'summarise' },
          },
        ],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  });
  afterAll(async () => {
    await hookgate.close();
    temp.cleanup();
  });

  it('github-pr-digest.ts turns an opened pull request into an agent run', async () => {
    const { status, body } = await post('github', pullRequest('opened'), {
      'x-github-event': 'pull_request',
    });
    expect(status).toBe(200);
    const action = (await stored(body?.['runId'])) as AgentAction;
    expect(action.name).toBe('GitHub');
    expect(action.message).toContain('Pull request #42 opened in octocat/hello-world by mona');
    expect(action.message).toContain('(rate-limit -> main, medium: +120/-30 in 4 files)');
    expect(action.sessionKey).toBe('hook:github:octocat@hello-world');
  });

  it.each([
    ['closed', pullRequest('closed')],
    ['a draft', pullRequest('opened', true)],
  ])('github-pr-digest.ts drops %s pull requests (204)', async (_name, payload) => {
    expect((await post('github', payload, { 'x-github-event': 'pull_request' })).status).toBe(204);
  });

  it('stripe-event-summary.js wakes the agent now for a failed payment', async () => {
    const { status, body } = await post('stripe', stripeEvent);
    expect(status).toBe(200);
    const action = (await stored(body?.['id'])) as WakeAction;
    expect(action.mode).toBe('now');
    expect(action.text).toBe(
      'Payment failed for Jenny Rosen: 49.00 EUR (attempt 2). https://invoice.stripe.example/i/acct_1/test_YWNjdF8x',
    );
  });

  it('stripe-event-summary.js notes a paid invoice for the next heartbeat and drops other events', async () => {
    const paid = {
      ...stripeEvent,
      type: 'invoice.paid',
      data: { object: { ...stripeEvent.data.object, amount_paid: 4900 } },
    };
    const { body } = await post('stripe', paid);
    expect(((await stored(body?.['id'])) as WakeAction).mode).toBe('next-heartbeat');
    expect((await post('stripe', { ...stripeEvent, type: 'customer.created' })).status).toBe(204);
  });
});
