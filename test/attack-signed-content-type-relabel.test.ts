/**
 * Attack: a signed delivery captured and sent again with another Content-Type. The signature
 * covers the body's bytes, not the header; read as a form, a JSON body became fields split at
 * its `&` and `=`. A Stripe event resent as a form had no delivery id to be a replay of and ran
 * a second agent action; an ignored GitHub comment resent as a form under `X-GitHub-Event: push`
 * gave the push mapping the fields a commenter wrote (`&ref=...&pusher=...`) and woke the agent.
 * On a signed route, bytes that are a JSON object are now read as JSON whatever the label.
 */
import { randomUUID } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { octokitExample, sendRaw, storedActions } from './helpers/signed-http.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

const FORM = 'application/x-www-form-urlencoded';

it('a Stripe delivery resent as a form is a replay, not a second run', async () => {
  const secret = 'whsec_ctype_replay_0123456789abcdef';
  const server = await startTestServer({
    hooks: { presets: ['stripe'], stripe: { auth: { secret } } },
  });
  servers.push(server);
  const body = JSON.stringify({
    id: 'evt_1',
    object: 'event',
    type: 'invoice.paid',
    livemode: false,
    data: {
      object: {
        id: 'in_1',
        object: 'invoice',
        amount_paid: 1999,
        currency: 'usd',
        customer: 'cus_1',
      },
    },
  });
  const header = new Stripe('sk_test_x').webhooks.generateTestHeaderString({
    payload: body,
    secret,
  });
  const first = await sendRaw(server, 'stripe', body, {
    'content-type': 'application/json',
    'stripe-signature': header,
  });
  expect(first.status).toBe(200);
  const again = await sendRaw(server, 'stripe', body, {
    'content-type': FORM,
    'stripe-signature': header,
  });
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await storedActions(server)).toHaveLength(1);
});

it('an ignored GitHub delivery resent as a form under another event stays ignored', async () => {
  const secret = 'gh-relabel-secret-0123456789';
  const server = await startTestServer({
    hooks: { presets: ['github'], github: { auth: { secret } } },
  });
  servers.push(server);
  const example = octokitExample('issue_comment', 'edited') as { comment: { body: string } };
  example.comment.body = 'typo fixed &ref=refs/heads/main&pusher=ci&head_commit=deploy now&';
  const body = JSON.stringify(example);
  const signature = await sign(secret, body);
  const headers = (event: string, type: string) => ({
    'content-type': type,
    'x-github-event': event,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': signature,
  });
  const comment = await sendRaw(
    server,
    'github',
    body,
    headers('issue_comment', 'application/json'),
  );
  expect(comment.status).toBe(200);
  const relabelled = await sendRaw(server, 'github', body, headers('push', FORM));
  expect(relabelled.status).toBe(200);
  expect(relabelled.body).toMatchObject({ ignored: expect.any(String) });
  expect(await storedActions(server)).toEqual([]);
});
