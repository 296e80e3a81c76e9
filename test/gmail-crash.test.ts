/**
 * Nothing is lost across a crash between a push and its sync, with the real
 * binary: a signed push is recorded and acknowledged while Gmail is down, the
 * process is killed (SIGKILL) before any mail was turned into an agent run,
 * `hookgate gmail status` then shows the push waiting and the last error, and
 * the next start on the same data runs each new message exactly once, with no
 * push needed. A redelivery of that push afterwards runs nothing again; a
 * sync Gmail rate-limits runs again by itself once Retry-After has passed;
 * and a crash after a sync ran part of the new mail runs the rest at the
 * next start, the part that ran never again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  actionMessageIds,
  envelope,
  type GmailService,
  gmailActions,
  gmailStatus,
  historyCalls,
  sendPush,
  startGmailService,
  type OidcWorld,
  startOidcWorld,
} from './helpers/gmail-binary.ts';
import type { GmailStandIn } from './helpers/gmail-stand-in.ts';
import { type SigningKey, signToken } from './helpers/jwks-stand-in.ts';
import { killAll, runHookgate, tempDir } from './helpers/process.ts';
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

async function signedPush(service: GmailService, messageId: string): Promise<number> {
  return sendPush(service.pushUrl, envelope(messageId, gmail.historyId()), {
    authorization: `Bearer ${await signToken(key)}`,
  });
}

/** Answer every scripted failure still queued, so that Gmail answers normally from now on. */
async function drainFailures(): Promise<void> {
  const headers = { authorization: `Bearer ${gmail.currentAccessToken()}` };
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${gmail.apiBaseUrl}/gmail/v1/users/me/profile`, { headers });
    await res.arrayBuffer();
    if (res.ok) return;
  }
  throw new Error('the stand-in kept failing');
}

describe('SIGKILL between a push and its sync', () => {
  let service: GmailService;
  let messages: string[];

  it('the push is acknowledged while Gmail is down, and nothing runs yet', async () => {
    service = await startGmailService(file);
    await until('the first watch', () => gmail.watches.length === 1);
    // The start-up sync reads the history once; only then is Gmail made to fail.
    await until('the start-up sync', () => historyCalls(gmail) >= 1);
    await until(
      'the start-up sync recorded',
      async () => (await gmailStatus(file)).cursor !== undefined,
    );
    messages = [
      gmail.addMessage({ from: 'Ann <ann@example.com>', subject: 'Invoice 42', text: 'Pay.' }),
      gmail.addMessage({ from: 'bob@example.com', subject: 'Lunch?', text: 'At noon.' }),
    ];
    gmail.failNext(503, 50);
    const before = historyCalls(gmail);
    expect(await signedPush(service, 'crash-p1')).toBe(204);
    await until('the sync tried and failed', async () => {
      if (historyCalls(gmail) <= before) return false;
      return (await gmailStatus(file)).lastError !== undefined;
    });
    // Pub/Sub redelivers the first and sends another while the sync cannot finish.
    expect(await signedPush(service, 'crash-p1')).toBe(204);
    expect(await signedPush(service, 'crash-p1b')).toBe(204);
    expect(await gmailActions(dataDir)).toEqual([]);
  });

  it('after SIGKILL, gmail status shows both pushes waiting and the last error', async () => {
    service.child.kill('SIGKILL');
    expect(await service.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
    const status = await gmailStatus(file);
    expect(status.pendingPushes).toBe(2);
    expect(status.lastError).toEqual(expect.any(String));
    expect(status.lastError).not.toBe('');
    expect(await gmailActions(dataDir)).toEqual([]);
    const text = await runHookgate(['gmail', 'status', '--config', file]);
    expect(text.stdout).toContain('pushes waiting for a sync: 2');
    expect(text.stdout).toMatch(/^last error: (?!none$).+$/m);
  });

  it('gmail status names what Gmail answered as the last error', async () => {
    // The operator must tell an outage (5xx) from a rate limit or a network failure.
    const text = await runHookgate(['gmail', 'status', '--config', file]);
    expect(text.stdout).toMatch(/^last error: .*503/m);
  });

  it('the next start runs each message exactly once, with no push', async () => {
    await drainFailures();
    service = await startGmailService(file);
    await until(
      'one action per message',
      async () => (await gmailActions(dataDir)).length >= 2,
      20_000,
    );
    await until('the push covered', async () => (await gmailStatus(file)).pendingPushes === 0);
    expect(await actionMessageIds(dataDir)).toEqual([...messages].sort());
    const actions = await gmailActions(dataDir);
    const sessions = actions.map((a) => a['sessionKey']).sort();
    expect(sessions).toEqual(messages.map((id) => `hook:gmail:${id}`).sort());
    const status = await gmailStatus(file);
    expect(status.lastError).toBeUndefined();
  });

  it('a redelivery of the same push afterwards adds nothing', async () => {
    expect(await signedPush(service, 'crash-p1')).toBe(204);
    // A fresh push at the cursor is covered at once (nothing past the cursor to read): once no
    // push waits, nothing the redelivery could have queued is left to run.
    expect(await signedPush(service, 'crash-p2')).toBe(204);
    await until('no push waiting', async () => (await gmailStatus(file)).pendingPushes === 0);
    expect(await actionMessageIds(dataDir)).toEqual([...messages].sort());
  });
});

describe('a sync Gmail rate-limits', () => {
  beforeAll(killAll);

  it('runs again by itself after Retry-After, without another push', async () => {
    const started = historyCalls(gmail);
    const service = await startGmailService(file);
    await until('the start-up sync', () => historyCalls(gmail) > started);
    const mail = gmail.addMessage({ from: 'cy@example.com', subject: 'Later', text: 'Hi.' });
    gmail.failNext(429, 1, { retryAfter: '1' });
    const before = historyCalls(gmail);
    expect(await signedPush(service, 'crash-p3')).toBe(204);
    await until('the mail ran', async () => (await actionMessageIds(dataDir)).includes(mail));
    expect(historyCalls(gmail)).toBeGreaterThanOrEqual(before + 2);
    expect((await gmailStatus(file)).pendingPushes).toBe(0);
  });
});

/** What the stand-in answers now to an authorized GET of `path` (to replay it later). */
async function answerNow(path: string): Promise<string> {
  const res = await fetch(`${gmail.apiBaseUrl}/gmail/v1/users/me%40example.com/${path}`, {
    headers: { authorization: `Bearer ${gmail.currentAccessToken()}` },
  });
  if (!res.ok) throw new Error(`stand-in answered ${res.status} to ${path}`);
  return res.text();
}

describe('SIGKILL after a sync ran part of the new mail', () => {
  beforeAll(killAll);

  it('the next start runs the rest, and the part that ran never again', async () => {
    const started = historyCalls(gmail);
    let service = await startGmailService(file);
    await until('the start-up sync', () => historyCalls(gmail) > started);
    await until(
      'the start-up sync recorded',
      async () => (await gmailStatus(file)).pendingPushes === 0,
    );
    const { cursor } = await gmailStatus(file);
    const first = gmail.addMessage({ from: 'dee@example.com', subject: 'One', text: '1' });
    const second = gmail.addMessage({ from: 'dee@example.com', subject: 'Two', text: '2' });
    // Read first (the stand-in's own answers use its script), then script: the history and
    // the first message answered as Gmail would, the second refused.
    const history = await answerNow(`history?startHistoryId=${cursor}&labelId=INBOX`);
    const message = await answerNow(`messages/${first}?format=full`);
    gmail.answerNext({ status: 200, body: history });
    gmail.answerNext({ status: 200, body: message });
    gmail.failNext(503, 1);
    expect(await signedPush(service, 'crash-p4')).toBe(204);
    await until('the first message ran', async () =>
      (await actionMessageIds(dataDir)).includes(first),
    );
    await until('the sync stopped', async () => (await gmailStatus(file)).lastError !== undefined);
    expect(await actionMessageIds(dataDir)).not.toContain(second);

    service.child.kill('SIGKILL');
    await service.waitForExit();
    service = await startGmailService(file);
    await until('the second message ran', async () =>
      (await actionMessageIds(dataDir)).includes(second),
    );
    await until('the push covered', async () => (await gmailStatus(file)).pendingPushes === 0);
    const ids = await actionMessageIds(dataDir);
    expect(ids.filter((id) => id === first)).toHaveLength(1);
    expect(ids.filter((id) => id === second)).toHaveLength(1);
  });
});
