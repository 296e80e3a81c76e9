/**
 * Every config under examples/ works as shipped: `hookgate check --strict`
 * passes it (exit 0, no warning) with its variables set, and a server started
 * from it (port 0, a temporary data directory) takes one realistic delivery,
 * signed by the provider's own library, and stores what the example says.
 * Only where Google lives is changed for the Gmail example (local stand-ins).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readConfigDocument, resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { Action } from '../schemas/action.ts';
import { startGmailStandIn, type GmailStandIn } from './helpers/gmail-stand-in.ts';
import {
  type KeyServer,
  makeKey,
  type SigningKey,
  signToken,
  startKeyServer,
} from './helpers/jwks-stand-in.ts';
import { ROOT, runHookgate, tempDir } from './helpers/process.ts';
import { slackEvent } from './helpers/provider-payloads.ts';
import { nowSeconds, octokitExample, until } from './helpers/signed-http.ts';
import { slack } from './helpers/signature-senders.ts';

const hex = () => randomBytes(32).toString('hex');
const env: Record<string, string> = {
  HOOKS_TOKEN: hex(),
  GITHUB_WEBHOOK_SECRET: hex(),
  STRIPE_WEBHOOK_SECRET: `whsec_${hex()}`,
  SLACK_SIGNING_SECRET: hex(),
  SUPPORT_AGENT_URL: 'http://127.0.0.1:9/run',
};
const stripe = new Stripe('sk_test_examples');
const data = tempDir('hookgate-examples-');

let gmail: GmailStandIn;
let keys: KeyServer;
let key: SigningKey;
beforeAll(async () => {
  gmail = await startGmailStandIn();
  key = await makeKey('examples');
  keys = await startKeyServer([key]);
  Object.assign(env, {
    GMAIL_CLIENT_ID: gmail.clientId,
    GMAIL_CLIENT_SECRET: gmail.clientSecret,
    GMAIL_REFRESH_TOKEN: gmail.refreshToken,
  });
});
afterAll(async () => {
  await gmail.close();
  await keys.close();
  data.cleanup();
});

const file = (example: string) => path.join(ROOT, 'examples', example, 'hookgate.yaml');

let running: Hookgate | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

type GmailDoc = {
  hooks: {
    gmail: {
      apiBaseUrl: string;
      oauth: { tokenUrl: string };
      push: { jwksUrl: string; audience: string; serviceAccountEmail: string };
      serve: { port: number };
    };
  };
};

/** Start the example in process on 127.0.0.1:0 with a fresh data directory. */
async function boot(example: string, adjust: (raw: GmailDoc) => void = () => {}) {
  const { absolute, raw } = readConfigDocument(file(example));
  adjust(raw as GmailDoc);
  const loaded = resolveConfig(raw, {
    baseDir: path.dirname(absolute),
    file: absolute,
    env,
    dataDir: path.join(data.dir, `${example}-${randomUUID()}`),
  });
  running = await startHookgate(loaded, {
    host: '127.0.0.1',
    port: 0,
    runtime: false,
    logger: createLogger('silent'),
  });
  return running;
}

async function post(server: Hookgate, name: string, body: string, headers: Record<string, string>) {
  const res = await fetch(`${server.url}/hooks/${name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function stored(server: Hookgate): Promise<Action[]> {
  return (await server.store.listActions({ limit: 100 })).map((row) => row.action);
}

it.each(['github-agent', 'stripe-wake', 'gmail', 'slack-events', 'multi-agent'])(
  'hookgate check --strict passes examples/%s with no warning',
  async (example) => {
    const result = await runHookgate(['check', '--strict', '--config', file(example)], { env });
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('Config OK:');
    expect(result.stdout).not.toContain('warning:');
    expect(result.code).toBe(0);
    for (const secret of Object.values(env)) expect(result.stdout).not.toContain(secret);
  },
);

describe('examples boot and take a delivery', () => {
  it('github-agent: a signed issues.opened delivery becomes an agent run for the repository', async () => {
    const server = await boot('github-agent');
    const body = JSON.stringify(octokitExample('issues', 'opened'));
    const res = await post(server, 'github', body, {
      'x-github-event': 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': await githubSign(env['GITHUB_WEBHOOK_SECRET'] as string, body),
    });
    expect(res.status).toBe(200);
    const [action] = await stored(server);
    expect(action).toMatchObject({
      kind: 'agent',
      hook: 'github',
      mappingId: 'github-issues',
      agentId: 'main',
      sessionKey: expect.stringMatching(/^hook:github:/),
      verification: { scheme: 'github' },
    });
  });

  it('stripe-wake: a failed invoice wakes the main session now; another event is ignored', async () => {
    const server = await boot('stripe-wake');
    const secret = env['STRIPE_WEBHOOK_SECRET'] as string;
    const send = (payload: string) =>
      post(server, 'stripe', payload, {
        'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }),
      });
    const invoice = readFileSync(
      path.join(ROOT, 'test/fixtures/stripe-invoice-failed.json'),
      'utf8',
    );
    expect((await send(invoice)).status).toBe(200);
    const other = JSON.stringify({
      ...JSON.parse(invoice),
      id: 'evt_other',
      type: 'customer.created',
    });
    expect((await send(other)).status).toBe(200);
    const actions = await stored(server);
    expect(actions).toHaveLength(1);
    expect(actions[0]).toMatchObject({
      kind: 'wake',
      mode: 'now',
      mappingId: 'stripe-payment-failed',
      verification: { scheme: 'stripe' },
    });
    const text = (actions[0] as { text: string }).text;
    expect(text).toContain('Stripe invoice.payment_failed: invoice in_1QxYz92eZvKYlo2CJ1k2L3m4');
    expect(text).toContain('jenny.rosen@example.com (test)');
  });

  it('gmail: it watches the mailbox, and a signed push becomes one agent run per new message', async () => {
    const server = await boot('gmail', (raw) => {
      // Google's addresses become the local stand-ins; the push listener takes a free port.
      const settings = raw.hooks.gmail;
      settings.apiBaseUrl = gmail.apiBaseUrl;
      settings.oauth.tokenUrl = gmail.tokenUrl;
      settings.push.jwksUrl = keys.url;
      settings.serve.port = 0;
    });
    expect(server.mail?.pushUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    await until('the watch', () => gmail.watches.length > 0);
    expect(gmail.watches.at(-1)).toMatchObject({
      topicName: 'projects/my-project/topics/gmail-watch',
      labelIds: ['INBOX'],
    });
    const id = gmail.addMessage({ from: 'ann@example.com', subject: 'Invoice 42', text: 'Pay.' });
    // Signed for the example's own audience and push identity.
    const { audience, serviceAccountEmail } = (readConfigDocument(file('gmail')).raw as GmailDoc)
      .hooks.gmail.push;
    const token = await signToken(key, { aud: audience, email: serviceAccountEmail });
    const data = Buffer.from(
      JSON.stringify({ emailAddress: 'me@example.com', historyId: gmail.historyId() }),
    ).toString('base64');
    const res = await fetch(`${server.mail?.pushUrl}/gmail-pubsub`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        message: { data, messageId: 'push-1', publishTime: new Date().toISOString() },
        subscription: 'projects/my-project/subscriptions/gmail-watch-push',
      }),
    });
    expect(res.status).toBe(204);
    await until('the mail action', async () => (await stored(server)).length === 1);
    expect((await stored(server))[0]).toMatchObject({
      kind: 'agent',
      hook: 'gmail',
      sessionKey: `hook:gmail:${id}`,
    });
  });

  it('slack-events: a signed app_mention becomes an agent run for the channel', async () => {
    const server = await boot('slack-events');
    const body = JSON.stringify(
      slackEvent({ type: 'app_mention', user: 'U0ADA', channel: 'C0OPS', text: '<@UBOT> status?' }),
    );
    const headers = await slack.sign(env['SLACK_SIGNING_SECRET'] as string, body, nowSeconds());
    const res = await post(server, 'slack', body, headers);
    expect(res.status).toBe(200);
    const [action] = await stored(server);
    expect(action).toMatchObject({
      kind: 'agent',
      hook: 'slack',
      sessionKey: 'hook:slack:C0OPS',
      thinking: 'low',
      verification: { scheme: 'slack' },
    });
  });

  it('multi-agent: mappings choose the agent, and an agent outside allowedAgentIds is refused', async () => {
    const server = await boot('multi-agent');
    const auth = { authorization: `Bearer ${env['HOOKS_TOKEN']}` };
    const alert = {
      status: 'firing',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'DiskFull', severity: 'critical', instance: 'db-1' },
          annotations: { summary: 'Disk 95% full on db-1' },
        },
      ],
    };
    expect((await post(server, 'alerts', JSON.stringify(alert), auth)).status).toBe(200);
    const ticket = { ticket: { id: 'T-1042', requester: 'ada@example.com', subject: 'Refund' } };
    expect((await post(server, 'support', JSON.stringify(ticket), auth)).status).toBe(200);
    const refused = await post(
      server,
      'agent',
      JSON.stringify({ message: 'look into it', agentId: 'research' }),
      auth,
    );
    expect(refused.status).toBe(403);
    const actions = await stored(server);
    expect(actions.map((a) => [a.mappingId, (a as { agentId?: string }).agentId])).toEqual([
      ['support-ticket', 'support'],
      ['alerts', 'ops'],
    ]);
    expect(actions[1]).toMatchObject({ sessionKey: 'hook:alerts:DiskFull' });
  });
});
