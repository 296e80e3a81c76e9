/**
 * Attack (an outage, or a consent renewed late): a sync that stopped part way (Gmail's 429 on
 * one message) ran the messages before the stop without being a good sync. After more than the
 * week the ledger keeps a message's key without a good sync, the fallback reads from the last
 * good sync again: the prune had forgotten those messages' keys and they ran a second time.
 * The running server's prune now keeps the mail flow's keys back to where its fallback reads.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { fetchedMessage, type GmailFront, startGmailFront } from './helpers/gmail-front.ts';
import { type GmailStandIn, googleError, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'partial-sync-push-token-0123456789';
const DAY_MS = 24 * 60 * 60 * 1000;

let gmail: GmailStandIn | undefined;
let front: GmailFront | undefined;
let server: TestServer | undefined;
const data = tempDir();
afterEach(async () => {
  await server?.close();
  server = undefined;
  await front?.close();
  front = undefined;
  await gmail?.close();
  gmail = undefined;
  vi.useRealTimers();
  data.cleanup();
});

/** Gmail behind a proxy that answers 429 to messages.get of the blocked ids. */
async function blockingProxy(target: string, blocked: Set<string>): Promise<string> {
  front = await startGmailFront(target, (req, res) => {
    const id = fetchedMessage(req);
    if (id === undefined || !blocked.has(id)) return false;
    req.resume();
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' });
    res.end(googleError(429, 'userRateLimitExceeded'));
    return true;
  });
  return front.url;
}

it('a mail run by a sync that stopped part way does not run again after a week without a good sync', async () => {
  gmail = await startGmailStandIn();
  const stand = gmail;
  const blocked = new Set<string>();
  const apiBaseUrl = await blockingProxy(stand.apiBaseUrl, blocked);
  const start = () =>
    startTestServer(
      {
        hooks: mailHooks(stand, { push: { mode: 'token' }, pushToken: PUSH_TOKEN, apiBaseUrl }),
      },
      { dataDir: data.dir },
    );
  server = await start();
  const first = server;
  await startupSynced(first);
  const lastGood = first.mail?.state().lastSuccessAtMs;

  const ran = stand.addMessage({
    from: 'ann@example.com',
    subject: 'Pay',
    text: 'Please pay.',
    receivedAtMs: Date.now(),
  });
  const stuck = stand.addMessage({
    from: 'bob@example.com',
    subject: 'Hi',
    text: 'Hello.',
    receivedAtMs: Date.now(),
  });
  blocked.add(stuck);
  expect(await pushTo(first, 'p1', stand.historyId(), { 'x-gog-token': PUSH_TOKEN })).toBe(204);
  const ids = async (running: TestServer) =>
    (await running.store.listActions({ limit: 50 })).map((a) => a.action.verification?.deliveryId);
  await until('the first mail ran', async () => (await ids(first)).includes(ran));
  await first.mail?.sync.idle();
  // The sync stopped on the 429: no good sync since.
  expect(first.mail?.state().lastSuccessAtMs).toBe(lastGood);
  const pruneWindowMs = first.live.current().routes.maxKeyWindowMs;
  // What the running server's prune keeps of the mail flow's keys.
  const keep = first.mail?.keepKeys();
  expect(keep).toBeDefined();
  await first.close();
  server = undefined;

  // Nine days on (a token renewed late, an outage): the running server's prune meanwhile,
  // the history expired, Gmail answering again.
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() + 9 * DAY_MS);
  const store = await openSqliteStore(data.dir);
  await store.pruneIdempotency(Date.now() - pruneWindowMs, keep);
  await store.close();
  stand.expireHistory();
  blocked.clear();
  server = await start();
  const second = server;
  await until(
    'the sync after the restart',
    () => (second.mail?.state().lastSuccessAtMs ?? 0) > Date.now() - DAY_MS,
  );
  await second.mail?.sync.idle();
  const all = await ids(second);
  expect(all).toContain(stuck);
  // Ran once, by the sync that stopped part way nine days ago.
  expect(all.filter((id) => id === ran)).toEqual([ran]);
}, 30_000);
