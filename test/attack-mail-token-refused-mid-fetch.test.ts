/**
 * Attack (or an operator rotating the OAuth client's secret): the access token lapses while a
 * message is fetched, and the token endpoint refuses the refresh with `invalid_client`. That
 * refusal was taken for the message's ("Gmail cannot give it"), so the message was skipped, the
 * cursor moved past it, and once the token worked again nothing showed that a mail was lost.
 * It is the mailbox's failure: the sync waits, and the next sync runs the message. So is a 403
 * other than a rate limit (a daily quota, the API disabled), which was skipped the same way.
 */
import { afterEach, expect, it } from 'vitest';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { fetchedMessage, type GmailFront, startGmailFront } from './helpers/gmail-front.ts';
import { type GmailStandIn, googleError, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'token-skip-push-token-0123456789';
let gmail: GmailStandIn | undefined;
let front: GmailFront | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  await front?.close();
  front = undefined;
  await gmail?.close();
});

/** Gmail behind a front that answers `status` (Google's error JSON) to the next message fetch once armed. */
async function expiringFront(target: string, status = 401, reason?: string) {
  let armed = false;
  front = await startGmailFront(target, (req, res) => {
    if (!armed || fetchedMessage(req) === undefined) return false;
    armed = false;
    req.resume();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(googleError(status, reason));
    return true;
  });
  return {
    url: front.url,
    arm: () => {
      armed = true;
    },
  };
}

it.each([
  ['a refused token refresh (invalid_client)', 401, undefined, true],
  ['a daily quota refusal (403 dailyLimitExceeded)', 403, 'dailyLimitExceeded', false],
] as const)(
  '%s while a message is fetched: the message waits and runs later',
  async (_name, status, reason, tokenRefused) => {
    gmail = await startGmailStandIn();
    const front = await expiringFront(gmail.apiBaseUrl, status, reason);
    server = await startTestServer({
      hooks: mailHooks(gmail, {
        push: { mode: 'token' },
        pushToken: PUSH_TOKEN,
        apiBaseUrl: front.url,
      }),
    });
    const running = server;
    const g = gmail;
    await startupSynced(running);
    const first = g.addMessage({ from: 'a@example.com', subject: 'First', text: 'one' });
    const second = g.addMessage({ from: 'b@example.com', subject: 'Second', text: 'two' });
    front.arm();
    if (tokenRefused)
      g.answerNext({ status: 401, body: JSON.stringify({ error: 'invalid_client' }) }, 'token');
    const push = (id: string) => pushTo(running, id, g.historyId(), { 'x-gog-token': PUSH_TOKEN });
    expect(await push('p-1')).toBe(204);
    const ran = async () =>
      (await running.store.listActions({ limit: 100 })).map(
        (a) => a.action.verification?.deliveryId,
      );
    // The sync that met the refusal is over (it waits) before the next push asks again.
    await until(
      'the sync stopped on the refusal',
      () => running.mail?.state().lastError !== undefined,
    );
    await running.mail?.sync.idle();
    expect(await ran()).not.toContain(first);
    const third = g.addMessage({ from: 'c@example.com', subject: 'Third', text: 'three' });
    expect(await push('p-2')).toBe(204);
    await until(
      'all three ran',
      async () => {
        const ids = await ran();
        return [first, second, third].every((id) => ids.includes(id));
      },
      20_000,
    );
  },
  40_000,
);
