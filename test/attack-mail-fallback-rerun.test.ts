/**
 * A mail that ran once runs again after the service (or its consent) was out for more than a
 * week. Gmail message ids are remembered a week; after an expired cursor the fallback reads the
 * newest messages received since an hour before the last good sync. When the last good sync is
 * more than a week old, mail from the hour before it is older than the memory of the ids: it is
 * read again by the fallback, not recognised, and becomes a second agent run. (A consent that
 * lapsed for a week is common: a Google OAuth app in "Testing" loses its refresh token every
 * seven days.) Time passing is stood in for by a faked clock (Date only) between two starts on
 * the same data directory.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { ACCOUNT, envelope } from './helpers/gmail-binary.ts';
import {
  type GmailStandIn,
  gmailSettings,
  PUSH_PATH,
  startGmailStandIn,
} from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'fallback-rerun-push-token-0123456789';
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

it('after eight days out and an expired cursor, a mail that already ran is not run a second time', async () => {
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
  await first.close();
  server = undefined;

  // Eight days later, with a new mail meanwhile: Gmail no longer keeps the history the cursor
  // points into.
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() + 8 * DAY_MS);
  const meanwhile = stand.addMessage({
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
  // The one that ran does not run again; the mail of the outage runs.
  expect((await ranIds(second)).sort()).toEqual([mail, meanwhile].sort());
}, 20_000);
