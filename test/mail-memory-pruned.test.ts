/**
 * The fallback after an expired cursor trusts the ledger to remember a Gmail message that ran
 * for a week (engine/gmail/message-memory.ts). The server's own prune (every ten minutes)
 * deleted every idempotency key older than max(idempotencyWindowSeconds,
 * deliveryRetentionSeconds), three days by default, the `gmail-message:` keys included: after
 * four days out, mail from the hour before the last good sync ran a second time. With the mail
 * flow on, the prune keeps keys a week. The prune is done here as the running server does it,
 * with the window the server prunes with, between two starts.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { ACCOUNT, envelope } from './helpers/gmail-binary.ts';
import {
  type GmailStandIn,
  gmailSettings,
  PUSH_PATH,
  startGmailStandIn,
} from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'review-memory-push-token-0123456789';
const DAY_MS = 24 * 60 * 60 * 1000;

let gmail: GmailStandIn | undefined;
let server: TestServer | undefined;
const data = tempDir();
afterEach(async () => {
  await server?.close();
  server = undefined;
  await gmail?.close();
  gmail = undefined;
  vi.useRealTimers();
  data.cleanup();
});

function start(stand: GmailStandIn): Promise<TestServer> {
  return startTestServer(
    {
      hooks: {
        presets: ['gmail'],
        gmail: gmailSettings(stand, ACCOUNT, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
      },
    },
    { dataDir: data.dir },
  );
}

const ranIds = async (running: TestServer) =>
  (await running.store.listActions({ limit: 50 })).map((a) => a.action.verification?.deliveryId);

it('after four days out (the server pruning meanwhile), a mail that ran does not run again', async () => {
  gmail = await startGmailStandIn();
  const stand = gmail;
  server = await start(stand);
  const first = server;
  await until('the first sync', () => first.mail?.state().lastSuccessAtMs !== undefined);
  await first.mail?.sync.idle();
  const mail = stand.addMessage({
    from: 'ann@example.com',
    subject: 'Invoice',
    text: 'Please pay.',
    receivedAtMs: Date.now(),
  });
  const res = await fetch(`${first.mail?.pushUrl}${PUSH_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gog-token': PUSH_TOKEN },
    body: JSON.stringify(envelope('p1', stand.historyId())),
  });
  expect(res.status).toBe(204);
  await until('the mail ran', async () => (await ranIds(first)).length === 1);
  await first.mail?.sync.idle();
  const pruneWindowMs = first.live.current().routes.maxKeyWindowMs;
  await first.close();
  server = undefined;

  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() + 4 * DAY_MS);
  // The running server's ten-minute prune, as it would have run during the four days.
  const store = await openSqliteStore(data.dir);
  await store.pruneIdempotency(Date.now() - pruneWindowMs);
  await store.close();
  // A mail meanwhile, and Gmail no longer keeps the history the cursor points into.
  stand.addMessage({
    from: 'bob@example.com',
    subject: 'Back yet?',
    text: 'Hello.',
    receivedAtMs: Date.now() - DAY_MS,
  });
  stand.expireHistory();

  server = await start(stand);
  const second = server;
  await until(
    'the sync after the restart',
    () => (second.mail?.state().lastSuccessAtMs ?? 0) > Date.now() - DAY_MS,
  );
  await second.mail?.sync.idle();
  const ran = await ranIds(second);
  expect(ran.filter((id) => id === mail)).toEqual([mail]);
}, 20_000);
