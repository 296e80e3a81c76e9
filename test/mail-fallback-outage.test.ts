/**
 * The mail flow after an outage, when Gmail no longer keeps the history the cursor points into
 * and the sync falls back to the newest messages: a mail that ran never runs again, and mail
 * that never ran does. The fallback reads from an hour before the last good sync; the store's
 * prune keeps message keys a week while the service runs, and back to there when that is longer
 * ago (mail-fallback-partial-sync.test.ts). Time passing is stood in for by a faked
 * clock (Date only) between two starts on the same data directory.
 */
import { afterEach, expect, it, vi } from 'vitest';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'fallback-outage-push-token-0123456789';
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
      hooks: mailHooks(stand, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
    },
    { dataDir: data.dir },
  );
}

const ranIds = async (running: TestServer) =>
  (await running.store.listActions({ limit: 50 })).map((a) => a.action.verification?.deliveryId);

/**
 * The first start: its first sync, then (with `mail`) one mail pushed and run. Stopped after;
 * returns the mail's id, the last good sync and the window the running server pruned with.
 */
async function firstRun(withMail: boolean) {
  gmail = await startGmailStandIn();
  const stand = gmail;
  server = await start(stand);
  const first = server;
  await startupSynced(first);
  let mail: string | undefined;
  if (withMail) {
    const id = stand.addMessage({
      from: 'ann@example.com',
      subject: 'Invoice',
      text: 'Please pay.',
      receivedAtMs: Date.now(),
    });
    expect(await pushTo(first, 'p1', stand.historyId(), { 'x-gog-token': PUSH_TOKEN })).toBe(204);
    await until('the mail ran', async () => (await ranIds(first)).length === 1);
    await first.mail?.sync.idle();
    mail = id;
  }
  const lastGood = first.mail?.state().lastSuccessAtMs ?? Date.now();
  const pruneWindowMs = first.live.current().routes.maxKeyWindowMs;
  await first.close();
  server = undefined;
  return { stand, mail, lastGood, pruneWindowMs };
}

/** The clock `days` on, the history expired, a second start, and its fallback sync done. */
async function afterOutage(stand: GmailStandIn, days: number, prune?: number) {
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  vi.setSystemTime(Date.now() + days * DAY_MS);
  if (prune !== undefined) {
    // The running server's ten-minute prune, as it would have run during the outage.
    const store = await openSqliteStore(data.dir);
    await store.pruneIdempotency(Date.now() - prune);
    await store.close();
  }
  stand.expireHistory();
  server = await start(stand);
  const second = server;
  await until(
    'the sync after the restart',
    () => (second.mail?.state().lastSuccessAtMs ?? 0) > Date.now() - DAY_MS,
  );
  await second.mail?.sync.idle();
  return ranIds(second);
}

it('after eight days out, a mail that ran is not run again, and the mail of the outage runs', async () => {
  const { stand, mail } = await firstRun(true);
  const meanwhile = stand.addMessage({
    from: 'bob@example.com',
    subject: 'Back yet?',
    text: 'Hello.',
    receivedAtMs: Date.now() + 7 * DAY_MS,
  });
  expect((await afterOutage(stand, 8)).sort()).toEqual([mail, meanwhile].sort());
}, 20_000);

it('a mail that arrived after the last good sync and never ran is run after eight days out', async () => {
  const { stand, lastGood } = await firstRun(false);
  // Half an hour after the last good sync a mail arrives; the service is out from then on.
  const unseen = stand.addMessage({
    from: 'ann@example.com',
    subject: 'Contract to sign',
    text: 'Please sign today.',
    receivedAtMs: lastGood + 30 * 60 * 1000,
  });
  expect(await afterOutage(stand, 8)).toContain(unseen);
}, 20_000);

it('after four days out, the server pruning meanwhile, a mail that ran does not run again', async () => {
  const { stand, mail, pruneWindowMs } = await firstRun(true);
  stand.addMessage({
    from: 'bob@example.com',
    subject: 'Back yet?',
    text: 'Hello.',
    receivedAtMs: Date.now() + 3 * DAY_MS,
  });
  const ran = await afterOutage(stand, 4, pruneWindowMs);
  expect(ran.filter((id) => id === mail)).toEqual([mail]);
}, 20_000);
