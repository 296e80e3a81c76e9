/**
 * One history.list answer whose `historyId` is far ahead of the mailbox (the largest unsigned
 * 64-bit value: a valid id by shape) becomes the cursor, and the cursor only moves forward.
 * From then on every real push names a history id behind that cursor, so it is marked covered
 * with no Gmail call (the replay rule), and the safety-net sync never runs while pushes keep
 * coming. New mail is never read, and nothing tells the owner. The mailbox's own current
 * history id (users.watch, users.getProfile) says the cursor is impossible, but it is only used
 * when there is no cursor at all. Now a covered push no longer counts as the mailbox being
 * followed, so the hourly safety-net sync comes, and a sync whose history answer is behind the
 * cursor starts again from the recent messages with a cursor of the mailbox's.
 */
import { afterEach, expect, it } from 'vitest';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { SAFETY_NET_MS, safetySyncDue } from '../engine/gmail/upkeep.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'cursor-poison-push-token-0123456789';
const FAR_AHEAD = '18446744073709551615';

let gmail: GmailStandIn | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await gmail?.close();
  gmail = undefined;
});

const push = (running: TestServer, messageId: string, historyId: string) =>
  pushTo(running, messageId, historyId, { 'x-gog-token': PUSH_TOKEN });

it('a history page naming a history id far ahead of the mailbox: later mail still runs (the cursor is not stuck past every push)', async () => {
  gmail = await startGmailStandIn();
  const stand = gmail;
  server = await startTestServer({
    hooks: mailHooks(stand, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
  });
  const running = server;
  await startupSynced(running);

  // One mail, and the history page that reports it carries a history id far in the future.
  const first = stand.addMessage({ from: 'ann@example.com', subject: 'One', text: 'First.' });
  stand.answerNext({
    status: 200,
    body: JSON.stringify({
      history: [
        {
          id: stand.historyId(),
          messages: [{ id: first, threadId: first }],
          messagesAdded: [{ message: { id: first, threadId: first, labelIds: ['INBOX'] } }],
        },
      ],
      historyId: FAR_AHEAD,
    }),
  });
  expect(await push(running, 'p1', stand.historyId())).toBe(204);
  await until(
    'the first mail ran',
    async () => (await running.store.listActions({ limit: 10 })).length === 1,
  );
  await running.mail?.sync.idle();

  // Ordinary mail afterwards, each announced by Gmail's push as usual (dated now: the sync that
  // starts again from the recent messages reads those since the last good sync).
  const later: string[] = [];
  for (let i = 0; i < 3; i++) {
    later.push(
      stand.addMessage({
        from: 'bob@example.com',
        subject: `Later ${i}`,
        text: 'Hi.',
        receivedAtMs: Date.now(),
      }),
    );
    expect(await push(running, `p-later-${i}`, stand.historyId())).toBe(204);
  }
  const ran = async () =>
    (await running.store.listActions({ limit: 10 })).map((a) => a.action.verification?.deliveryId);
  // Each push is behind the cursor: covered, no sync. It does not count as the mailbox being
  // followed: the safety net's sync is due an hour after the last one that succeeded.
  await until('the pushes were covered', () => running.mail?.pendingPushes() === 0);
  const state = running.mail?.state();
  const hourAfterSync = (state?.lastSuccessAtMs ?? 0) + SAFETY_NET_MS;
  expect(state && safetySyncDue(state, hourAfterSync)).toBe(true);
  // The sync the safety net runs (upkeep's tick) finds the cursor ahead of the mailbox.
  await running.mail?.sync.request();
  await running.mail?.sync.idle();
  expect((await ran()).sort()).toEqual([first, ...later].sort());
  expect(running.mail?.state().cursor).toBe(stand.historyId());
  // From then on a push is new again and runs at once.
  const next = stand.addMessage({ from: 'cy@example.com', subject: 'Next', text: 'Hi.' });
  expect(await push(running, 'p-next', stand.historyId())).toBe(204);
  await until('the next mail ran', async () => (await ran()).includes(next));
}, 15_000);
