/**
 * A burst of new mail larger than Gmail lets one mailbox read per quota window (the per-user
 * limit: 6,000 units a minute, 20 units per messages.get, so about 300 messages a minute). The
 * sync reads a run of history, then messages.get for each id, and only then asks the ledger
 * whether the message ran before. A sync stopped by the rate limit half way through is tried
 * again from the same cursor, and it spends its next window fetching again the messages that
 * already ran; when the burst is larger than a window, every try stops at the same place and
 * the mail past it (and all mail after it) never runs. Anyone can send that many mails.
 *
 * Here Gmail (the stand-in behind a small quota proxy) allows five messages.get per second and
 * answers 429 `userRateLimitExceeded` with `Retry-After: 1` past that; twelve mails arrive in
 * one push. Reading on from where the last try stopped would run them all in three windows.
 */
import { afterEach, expect, it } from 'vitest';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { fetchedMessage, type GmailFront, startGmailFront } from './helpers/gmail-front.ts';
import { type GmailStandIn, googleError, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'quota-livelock-push-token-0123456789';
const GETS_PER_WINDOW = 5;
const WINDOW_MS = 1_000;
const BURST = 12;

let gmail: GmailStandIn | undefined;
let front: GmailFront | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await front?.close();
  front = undefined;
  await gmail?.close();
  gmail = undefined;
});

/** Gmail's per-user quota in front of the stand-in: GETS_PER_WINDOW messages.get per window. */
async function quotaProxy(target: string): Promise<{ url: string; gets: () => number }> {
  let windowStart = Date.now();
  let used = 0;
  let gets = 0;
  front = await startGmailFront(target, (req, res) => {
    if (fetchedMessage(req) === undefined) return false;
    const now = Date.now();
    if (now - windowStart >= WINDOW_MS) {
      windowStart = now;
      used = 0;
    }
    if (used >= GETS_PER_WINDOW) {
      req.resume();
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(googleError(429, 'userRateLimitExceeded'));
      return true;
    }
    used++;
    gets++;
    return false;
  });
  return { url: front.url, gets: () => gets };
}

it('a burst larger than one quota window: every mail runs once, the retries read on instead of fetching again what already ran', async () => {
  gmail = await startGmailStandIn();
  const quota = await quotaProxy(gmail.apiBaseUrl);
  server = await startTestServer({
    hooks: mailHooks(gmail, {
      push: { mode: 'token' },
      pushToken: PUSH_TOKEN,
      apiBaseUrl: quota.url,
    }),
  });
  const running = server;
  await startupSynced(running);

  const ids: string[] = [];
  for (let i = 0; i < BURST; i++) {
    ids.push(gmail.addMessage({ from: `list${i}@example.com`, subject: `Mail ${i}`, text: 'Hi.' }));
  }
  expect(await pushTo(running, 'burst-1', gmail.historyId(), { 'x-gog-token': PUSH_TOKEN })).toBe(
    204,
  );

  const ran = async () =>
    (await running.store.listActions({ limit: 100 }))
      .map((a) => a.action.verification?.deliveryId)
      .sort();
  // Three windows are enough to read twelve messages five at a time; the retries wait 1, 2
  // and 4 s (the doubling floor), so ten seconds leave room for a slow machine.
  await until(
    'every mail of the burst ran',
    async () => (await ran()).length === BURST,
    10_000,
  ).catch(() => undefined);
  expect({ ran: (await ran()).length, fetched: quota.gets() }).toMatchObject({ ran: BURST });
  expect(await ran()).toEqual([...ids].sort());
  // Each message fetched once: a retry reads on from where the last try stopped.
  expect(quota.gets()).toBe(BURST);
}, 20_000);
