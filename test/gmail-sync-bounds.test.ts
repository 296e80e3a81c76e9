/**
 * The sync against a Gmail that would keep it busy for ever, in the real server with the Gmail
 * stand-in: a history whose pages never end (the same next page, or a new one each time) is
 * followed a bounded number of pages and shutdown does not wait for it; a rate limit saying
 * `Retry-After: 0` (or a date in the past) is tried again after a floor that doubles, not at once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RETRY_FLOOR_MS } from '../engine/gmail/retry-wait.ts';
import { MAX_SYNC_PAGES } from '../engine/gmail/sync.ts';
import { mailHooks, pushTo, startupSynced } from './helpers/gmail-binary.ts';
import { type GmailStandIn, startGmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { until } from './helpers/signed-http.ts';

const PUSH_TOKEN = 'sync-bounds-push-token-0123456789';
// history.list pages the sync reads per run before it emits their messages (mail-source.ts).
const PAGES_PER_RUN = 5;

let gmail: GmailStandIn;
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await gmail.close();
});

async function start(): Promise<TestServer> {
  server = await startTestServer({
    hooks: mailHooks(gmail, { push: { mode: 'token' }, pushToken: PUSH_TOKEN }),
  });
  return server;
}

const historyCalls = () => gmail.calls.filter((call) => call.path.endsWith('/history'));

const push = (messageId: string) =>
  pushTo(server, messageId, gmail.historyId(), { 'x-gog-token': PUSH_TOKEN });

describe('a history without end', () => {
  it('every page naming the same next page (pages attack): the token is followed once, the sync goes on from the newest messages, and later mail runs', async () => {
    gmail = await startGmailStandIn();
    gmail.endlessHistory('same');
    const running = await start();
    await startupSynced(running);
    // The start syncs twice (the upkeep's tick, then the start's own); each reads two runs of
    // pages, the second ending on the token the first ended on.
    expect(historyCalls().length).toBeLessThanOrEqual(2 * 2 * PAGES_PER_RUN);
    expect(gmail.calls.some((call) => call.path.endsWith('/messages'))).toBe(true);
    gmail.endlessHistory(undefined);
    const mail = gmail.addMessage({ from: 'ann@example.com', subject: 'Hi', text: 'Hello.' });
    expect(await push('p1')).toBe(204);
    await until(
      'the mail ran',
      async () => (await running.store.listActions({ limit: 10 })).length === 1,
    );
    const actions = await running.store.listActions({ limit: 10 });
    expect(actions.map((a) => a.action.verification?.deliveryId)).toEqual([mail]);
  });

  it('a new next page every time, and a shutdown while it is read: the sync stops within one run of pages, and never reads more than MAX_SYNC_PAGES', async () => {
    gmail = await startGmailStandIn();
    gmail.endlessHistory('fresh');
    const running = await start();
    await until('the sync is following pages', () => historyCalls().length >= 3 * PAGES_PER_RUN);
    const atClose = historyCalls().length;
    await running.close();
    server = undefined;
    expect(historyCalls().length - atClose).toBeLessThanOrEqual(PAGES_PER_RUN);
    expect(historyCalls().length).toBeLessThanOrEqual(MAX_SYNC_PAGES);
  });
});

describe('a rate limit without a wait', () => {
  it.each([
    ['429 with Retry-After: 0', 429, '0'],
    ['503 with a Retry-After date in the past', 503, 'Thu, 01 Jan 1970 00:00:00 GMT'],
  ])(
    '%s (tight retry): the sync is tried again after one second, then two, and the mail runs once',
    async (_name, status, retryAfter) => {
      gmail = await startGmailStandIn();
      const running = await start();
      await startupSynced(running);
      const before = historyCalls().length;
      const mail = gmail.addMessage({ from: 'bob@example.com', subject: 'Later', text: 'Hi.' });
      gmail.failNext(status, 2, { retryAfter });
      expect(await push('p1')).toBe(204);
      await until(
        'the mail ran',
        async () => (await running.store.listActions({ limit: 10 })).length === 1,
        15_000,
      );
      const [first, second, third] = historyCalls()
        .slice(before)
        .map((call) => call.at);
      // Timers may fire a millisecond early by the wall clock.
      expect(second! - first!).toBeGreaterThanOrEqual(RETRY_FLOOR_MS - 5);
      expect(third! - second!).toBeGreaterThanOrEqual(2 * RETRY_FLOOR_MS - 5);
      const actions = await running.store.listActions({ limit: 10 });
      expect(actions.map((a) => a.action.verification?.deliveryId)).toEqual([mail]);
    },
    20_000,
  );

  it('the token endpoint answering 429 with Retry-After: 0 (tight retry): the refresh is tried again after one second, then two, and the mail runs once', async () => {
    gmail = await startGmailStandIn();
    const running = await start();
    await startupSynced(running);
    const mail = gmail.addMessage({ from: 'cy@example.com', subject: 'Later', text: 'Hi.' });
    // Gmail refuses the access token; each refresh is then rate limited twice.
    gmail.rotateAccessToken();
    const before = gmail.tokenTimes.length;
    for (let i = 0; i < 2; i++) {
      gmail.answerNext(
        { status: 429, headers: { 'retry-after': '0' }, body: '{"error":"rate_limited"}' },
        'token',
      );
    }
    expect(await push('p1')).toBe(204);
    await until(
      'the mail ran',
      async () => (await running.store.listActions({ limit: 10 })).length === 1,
      15_000,
    );
    const [first, second, third] = gmail.tokenTimes.slice(before);
    expect(second! - first!).toBeGreaterThanOrEqual(RETRY_FLOOR_MS - 5);
    expect(third! - second!).toBeGreaterThanOrEqual(2 * RETRY_FLOOR_MS - 5);
    const actions = await running.store.listActions({ limit: 10 });
    expect(actions.map((a) => a.action.verification?.deliveryId)).toEqual([mail]);
  }, 20_000);
});
