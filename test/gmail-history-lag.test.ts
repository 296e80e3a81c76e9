/**
 * Gmail's history can lag its push notification: history.list answers a history id older than
 * the one the push named. Such a push stays waiting (its mail is not in the history yet) and
 * the mailbox is read again soon, not at the next push or the safety net's hour; a push whose
 * history id never appears is marked covered after that hour, as the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coveredPushes, PUSH_AHEAD_MAX_MS } from '../engine/gmail/sync.ts';
import { SAFETY_NET_MS } from '../engine/gmail/upkeep.ts';
import {
  mailHooks,
  type OidcStandIns,
  pushTo,
  startOidcStandIns,
  startupSynced,
} from './helpers/gmail-binary.ts';
import type { GmailStandIn } from './helpers/gmail-stand-in.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { signToken } from './helpers/jwks-stand-in.ts';
import { until } from './helpers/signed-http.ts';
import { mailActions } from './helpers/store-reads.ts';

let standIns: OidcStandIns;
let gmail: GmailStandIn;
let server: TestServer | undefined;
const data = tempDir();

beforeAll(async () => {
  standIns = await startOidcStandIns();
  gmail = standIns.gmail;
});
afterAll(async () => {
  await server?.close();
  await standIns.close();
  data.cleanup();
});

const config = () => ({ hooks: mailHooks(gmail, { push: standIns.push }) });

async function push(target: TestServer, messageId: string, historyId: string): Promise<number> {
  return pushTo(target, messageId, historyId, {
    authorization: `Bearer ${await signToken(standIns.key)}`,
  });
}

describe('gmail history lagging a push', () => {
  it('a push ahead of history.list stays pending and its mail runs on the next sync', async () => {
    const started = await startTestServer(config(), { dataDir: data.dir });
    server = started;
    await startupSynced(started);
    const histories = () => gmail.calls.filter((c) => c.path.endsWith('/history')).length;

    // The push names the new mail's history id; history.list does not have it yet.
    gmail.holdHistory();
    const lagging = gmail.historyId();
    const id = gmail.addMessage({ from: 'ann@example.com', subject: 'Late', text: 'Lagged.' });
    const before = histories();
    expect(await push(started, 'p-ahead', gmail.historyId())).toBe(204);
    await until('a sync read the lagging history', () => histories() > before);
    await started.mail?.sync.idle();
    expect(started.mail?.state().cursor).toBe(lagging);
    expect(await mailActions(started)).toHaveLength(0);
    // Not covered: the cursor has not reached the push's history id.
    expect(started.mail?.pendingPushes()).toBe(1);

    // Gmail's history catches up: the mail runs without another push.
    gmail.releaseHistory();
    await until(
      'the mail runs on the next sync',
      async () => (await mailActions(started)).length === 1,
    );
    const [action] = await mailActions(started);
    expect(action).toMatchObject({ kind: 'agent', sessionKey: `hook:gmail:${id}` });
    await until('the push covered', () => started.mail?.pendingPushes() === 0);
    expect(started.mail?.state().cursor).toBe(gmail.historyId());
  });
});

describe('coveredPushes', () => {
  const NOW = 1_800_000_000_000;
  const push = (historyId: string, receivedAtMs = NOW) => ({ historyId, receivedAtMs });

  it('a push at or behind the answered history id is covered; one past it waits', () => {
    const at = push('1000');
    const behind = push('999');
    const ahead = push('1001');
    expect(coveredPushes([at, behind, ahead], '1000', NOW)).toEqual({
      covered: [at, behind],
      ahead: [ahead],
    });
  });

  it('history ids are compared as numbers, past the safe integers (not as text)', () => {
    const wide = push('18446744073709551615');
    const short = push('9');
    expect(coveredPushes([wide, short], '10', NOW)).toEqual({ covered: [short], ahead: [wide] });
    expect(coveredPushes([wide], '18446744073709551614', NOW).ahead).toEqual([wide]);
  });

  it("a push whose history id never appears is covered after the safety net's hour, as before", () => {
    expect(PUSH_AHEAD_MAX_MS).toBe(SAFETY_NET_MS);
    const young = push('2000', NOW - PUSH_AHEAD_MAX_MS + 1);
    const old = push('2000', NOW - PUSH_AHEAD_MAX_MS);
    expect(coveredPushes([young, old], '1000', NOW)).toEqual({ covered: [old], ahead: [young] });
  });
});
