/**
 * The fallback after an expired cursor does not read mail older than the ledger remembers a
 * message that ran, so that the margin before the last good sync does not run twice after a
 * long outage; mail that arrived after the last good sync cannot have run and is always read.
 * A mail half an hour after the last good sync, then eight days out: it runs.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { ACCOUNT } from './helpers/gmail-binary.ts';
import { type GmailStandIn, gmailSettings, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'review-unseen-push-token-0123456789';
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

it('a mail that arrived after the last good sync and never ran is run after eight days out', async () => {
  gmail = await startGmailStandIn();
  const stand = gmail;
  server = await start(stand);
  const first = server;
  await until('the first sync', () => first.mail?.state().lastSuccessAtMs !== undefined);
  await first.mail?.sync.idle();
  const lastGood = first.mail?.state().lastSuccessAtMs ?? Date.now();
  await first.close();
  server = undefined;

  // Half an hour after the last good sync a mail arrives; the service is out from then on.
  const unseen = stand.addMessage({
    from: 'ann@example.com',
    subject: 'Contract to sign',
    text: 'Please sign today.',
    receivedAtMs: lastGood + 30 * 60 * 1000,
  });
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() + 8 * DAY_MS);
  stand.expireHistory();

  server = await start(stand);
  const second = server;
  await until(
    'the sync after the restart',
    () => (second.mail?.state().lastSuccessAtMs ?? 0) > Date.now() - DAY_MS,
  );
  await second.mail?.sync.idle();
  expect(await ranIds(second)).toContain(unseen);
}, 20_000);
