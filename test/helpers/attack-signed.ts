/**
 * What the attack tests on signed routes share: a GitHub and a Stripe route,
 * their senders' headers, a server per test (stopped after it), and raw
 * socket helpers for what fetch cannot send.
 */
import { connect } from 'node:net';
import { sign as githubSign } from '@octokit/webhooks-methods';
import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterEach, vi } from 'vitest';
import { startTestServer, type TestServer } from './hookgate.ts';

export const GH_SECRET = 'gh-secret-0123456789abcdef';
export const STRIPE_SECRET = 'whsec_attack_0123456789abcdef';
export const stripe = new Stripe('sk_test_x');

export const ghMapping = {
  id: 'gh',
  match: { path: 'gh' },
  action: 'wake',
  textTemplate: 'gh {{payload.n}}',
  auth: { scheme: 'github', secret: GH_SECRET },
};

export const stripeMapping = {
  id: 'pay',
  match: { path: 'pay' },
  action: 'wake',
  textTemplate: 'pay {{payload.id}}',
  auth: { scheme: 'stripe', secret: STRIPE_SECRET },
};

/** A server per test with the two routes (and `hooks` over them), stopped after each test. */
export function attackServers() {
  const holder: { server?: TestServer | undefined } = {};
  afterEach(async () => {
    vi.useRealTimers();
    await holder.server?.stop();
    holder.server = undefined;
  });
  async function start(hooks: Record<string, unknown> = {}): Promise<TestServer> {
    holder.server = await startTestServer({
      hooks: { mappings: [ghMapping, stripeMapping], ...hooks },
    });
    return holder.server;
  }
  return { holder, start };
}

/** The headers GitHub sends with a push delivery of `body`. */
export async function githubHeaders(body: string, delivery = randomUUID()) {
  return {
    'x-github-event': 'push',
    'x-github-delivery': delivery,
    'x-hub-signature-256': await githubSign(GH_SECRET, body),
  };
}

/** The Stripe-Signature header of `body`, made by Stripe's own library. */
export function stripeHeaders(body: string, timestamp = Math.floor(Date.now() / 1000)) {
  const header = stripe.webhooks.generateTestHeaderString({
    payload: body,
    secret: STRIPE_SECRET,
    timestamp,
  });
  return { 'stripe-signature': header };
}

/** How many actions the server stored. */
export async function actionCount(s: TestServer): Promise<number> {
  return (await s.store.listActions({ limit: 1000 })).length;
}

/** Write request bytes as they are (rawExchange writes a string as UTF-8); resolve on close. */
export function rawBytes(url: string, request: Buffer): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.write(request);
  });
}

/** Status and text of an answer. */
export async function answer(res: Response) {
  return { status: res.status, body: await res.text() };
}
