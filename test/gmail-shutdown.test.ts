/**
 * Stopping the real binary (SIGTERM) while a mail sync waits on a slow Gmail:
 * the service still exits cleanly (status 0), and the mail that sync was
 * reading runs exactly once after the next start, with no push needed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  actionMessageIds,
  envelope,
  gmailStatus,
  historyCalls,
  sendPush,
  startGmailService,
  type OidcWorld,
  startOidcWorld,
} from './helpers/gmail-binary.ts';
import type { GmailStandIn } from './helpers/gmail-stand-in.ts';
import { type SigningKey, signToken } from './helpers/jwks-stand-in.ts';
import { tempDir } from './helpers/process.ts';
import { until } from './helpers/signed-http.ts';

const temp = tempDir();
let gmail: GmailStandIn;
let key: SigningKey;
let file: string;
let dataDir: string;

let world: OidcWorld;

beforeAll(async () => {
  world = await startOidcWorld(temp.dir);
  ({ gmail, key, file, dataDir } = world);
});
afterAll(async () => {
  await world.close();
  temp.cleanup();
});

/** What the stand-in answers now to an authorized GET of `path` (to replay it later). */
async function answerNow(path: string): Promise<string> {
  const res = await fetch(`${gmail.apiBaseUrl}/gmail/v1/users/me%40example.com/${path}`, {
    headers: { authorization: `Bearer ${gmail.currentAccessToken()}` },
  });
  if (!res.ok) throw new Error(`stand-in answered ${res.status} to ${path}`);
  return res.text();
}

describe('SIGTERM while a sync waits on Gmail', () => {
  it('exits cleanly, and the mail runs once after the next start', async () => {
    let service = await startGmailService(file);
    await until('the start-up sync', () => historyCalls(gmail) >= 1);
    await until('the cursor', async () => (await gmailStatus(file)).cursor !== undefined);
    const { cursor } = await gmailStatus(file);
    const mail = gmail.addMessage({ from: 'ann@example.com', subject: 'Slow', text: 'Hi.' });
    const history = await answerNow(`history?startHistoryId=${cursor}&labelId=INBOX`);
    const message = await answerNow(`messages/${mail}?format=full`);
    gmail.answerNext({ status: 200, body: history });
    // Gmail takes its time over the message: the stop arrives while the sync waits for it.
    gmail.answerNext({ status: 200, body: message, delayMs: 8_000 });
    const push = envelope('slow-p1', gmail.historyId());
    const authorization = `Bearer ${await signToken(key)}`;
    expect(await sendPush(service.pushUrl, push, { authorization })).toBe(204);
    await until('the sync asked for the message', () =>
      gmail.calls.some(
        (call) => call.path.endsWith(`/messages/${mail}`) && call.query.has('metadataHeaders'),
      ),
    );

    service.child.kill('SIGTERM');
    expect(await service.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(service.stderr()).toBe('');

    service = await startGmailService(file);
    await until(
      'the mail ran',
      async () => (await actionMessageIds(dataDir)).includes(mail),
      20_000,
    );
    await until('the push covered', async () => (await gmailStatus(file)).pendingPushes === 0);
    expect(await actionMessageIds(dataDir)).toEqual([mail]);
  });
});
