/**
 * The mail flow's durable state over a real SQLite file: a redelivered push
 * is one row, pending pushes survive a reopen until a sync covers them, and
 * the cursor only moves forward, history ids beyond 2^53 included.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openMailboxStore } from '../engine/gmail/mailbox-store.ts';
import { tempDir } from './helpers/hookgate.ts';

const ACCOUNT = 'me@example.com';
const dirs: Array<{ cleanup: () => void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.cleanup();
});

function fresh() {
  const dir = tempDir();
  dirs.push(dir);
  return dir.dir;
}

describe('mailbox store', () => {
  it('records a push once: a redelivery with the same message id is not a second row', () => {
    const store = openMailboxStore(fresh());
    const push = { messageId: 'm1', account: ACCOUNT, historyId: '100' };
    expect(store.recordPush(push, 1)).toBe(true);
    expect(store.recordPush(push, 2)).toBe(false);
    // When it was first recorded: a redelivery does not make it younger.
    expect(store.pendingPushes(ACCOUNT)).toEqual([{ ...push, receivedAtMs: 1 }]);
    expect(store.state(ACCOUNT).lastPushAtMs).toBe(2);
    store.close();
  });

  it('keeps pending pushes across a reopen until a sync marks them', () => {
    const dir = fresh();
    const first = openMailboxStore(dir);
    first.recordPush({ messageId: 'm1', account: ACCOUNT, historyId: '100' }, 1);
    first.recordPush({ messageId: 'm2', account: ACCOUNT, historyId: '101' }, 2);
    first.close();
    const again = openMailboxStore(dir);
    expect(again.pendingPushes(ACCOUNT).map((p) => p.messageId)).toEqual(['m1', 'm2']);
    again.markSynced(['m1'], 3);
    expect(again.pendingPushes(ACCOUNT).map((p) => p.messageId)).toEqual(['m2']);
    again.close();
  });

  it.each([
    ['a smaller id', '100', '99', '100'],
    ['the same id', '100', '100', '100'],
    ['a larger id', '100', '101', '101'],
    ['ids past 2^53', '9007199254740993', '9007199254740992', '9007199254740993'],
    ['a longer decimal', '999', '1000', '1000'],
  ])('moves the cursor forward only (%s)', (_name, first, next, expected) => {
    const store = openMailboxStore(fresh());
    store.advanceCursor(ACCOUNT, first);
    expect(store.advanceCursor(ACCOUNT, next)).toBe(expected);
    expect(store.state(ACCOUNT).cursor).toBe(expected);
    store.close();
  });

  it('an expired cursor is replaced, watches and consent are recorded', () => {
    const store = openMailboxStore(fresh());
    store.advanceCursor(ACCOUNT, '500');
    store.resetCursor(ACCOUNT, '20');
    store.recordWatch(ACCOUNT, 9_000, 10);
    store.setNeedsConsent(ACCOUNT, true);
    store.recordSync(ACCOUNT, 11, 'invalid_grant');
    expect(store.state(ACCOUNT)).toMatchObject({
      cursor: '20',
      watchExpirationMs: 9_000,
      watchedAtMs: 10,
      needsConsent: true,
      lastSyncAtMs: 11,
      lastError: 'invalid_grant',
    });
    store.close();
  });

  it('a failed watch stays recorded through a good sync, until a watch is made', () => {
    const store = openMailboxStore(fresh());
    store.recordWatchFailure(ACCOUNT, 'Gmail HTTP 403');
    store.recordSync(ACCOUNT, 11, undefined);
    expect(store.state(ACCOUNT)).toMatchObject({
      watchError: 'Gmail HTTP 403',
      lastError: undefined,
      lastSuccessAtMs: 11,
    });
    store.recordWatch(ACCOUNT, 9_000, 12);
    expect(store.state(ACCOUNT).watchError).toBeUndefined();
    store.close();
  });
});
