/**
 * The mailbox sync job over the real mailbox store and a scripted mailbox:
 * every added message becomes one action, once; the cursor moves only after
 * the actions are committed; an expired cursor falls back to the recent
 * messages; a refused authorisation stops the mailbox and tells the owner.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { type MailboxStore, openMailboxStore } from '../engine/gmail/mailbox-store.ts';
import {
  createMailboxSync,
  type MailItem,
  type MailResult,
  type MailSource,
} from '../engine/gmail/sync.ts';
import { tempDir } from './helpers/hookgate.ts';

const ACCOUNT = 'me@example.com';
const NOW = 1_800_000_000_000;
const dirs: Array<{ cleanup: () => void }> = [];
const stores: MailboxStore[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  for (const dir of dirs.splice(0)) dir.cleanup();
});

function item(id: string, receivedAtMs = NOW): MailItem {
  return { id, from: 'a@b.c', subject: `s ${id}`, snippet: 'hi', receivedAtMs };
}

/** A scripted mailbox: history after a cursor, messages by id, and failures to inject. */
function mailbox() {
  const history: Array<{ id: string; historyId: bigint }> = [];
  let expired = false;
  let failure: MailResult<never> | undefined;
  const source: MailSource = {
    async changes(cursor, pageToken) {
      if (failure) return failure;
      if (expired) return { kind: 'cursor_expired' };
      const after = history.filter((h) => h.historyId > BigInt(cursor));
      const last = history.at(-1)?.historyId ?? BigInt(cursor);
      // Two ids a run: the sync must follow the page token to the end.
      const from = Number(pageToken ?? 0);
      const ids = after.slice(from, from + 2).map((h) => h.id);
      const next =
        from + 2 < after.length ? { pageToken: String(from + 2) } : { historyId: String(last) };
      return { kind: 'ok', value: { messageIds: ids, next } };
    },
    async message(id) {
      if (failure) return failure;
      if (id.startsWith('broken')) return { kind: 'failed', reason: 'Gmail HTTP 400' };
      return { kind: 'ok', value: id.startsWith('spam') ? undefined : item(id) };
    },
    async recent(max) {
      const ids = history
        .slice(-max)
        .reverse()
        .map((h) => h.id);
      return {
        kind: 'ok',
        value: { messageIds: ids, historyId: String(history.at(-1)?.historyId ?? 0n) },
      };
    },
  };
  return {
    source,
    add(id: string, historyId: number) {
      history.push({ id, historyId: BigInt(historyId) });
    },
    expire() {
      expired = true;
    },
    fail(result: MailResult<never> | undefined) {
      failure = result;
    },
  };
}

function setup() {
  const dir = tempDir();
  dirs.push(dir);
  const store = openMailboxStore(dir.dir);
  stores.push(store);
  const box = mailbox();
  const committed = new Set<string>();
  const notes: string[] = [];
  let failEmit = false;
  let tokenHash = 'token-1';
  const sync = createMailboxSync({
    account: ACCOUNT,
    store,
    source: box.source,
    async emit(_account, message) {
      if (failEmit) throw new Error('store unavailable');
      if (committed.has(message.id)) return false;
      committed.add(message.id);
      return true;
    },
    notify: (text) => notes.push(text),
    tokenHash: () => tokenHash,
    logger: createLogger('silent'),
    now: () => NOW,
  });
  return {
    store,
    box,
    sync,
    committed,
    notes,
    failEmits(on: boolean) {
      failEmit = on;
    },
    newToken() {
      tokenHash = 'token-2';
    },
  };
}

describe('mailbox sync', () => {
  it('turns every added message into one action and moves the cursor after them', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.box.add('spam-1', 102);
    t.box.add('m2', 103);
    t.store.recordPush({ messageId: 'p1', account: ACCOUNT, historyId: '103' }, NOW);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 2 });
    expect([...t.committed]).toEqual(['m1', 'm2']);
    expect(t.store.state(ACCOUNT).cursor).toBe('103');
    expect(t.store.pendingPushes(ACCOUNT)).toEqual([]);
    // A redelivered push or a second sync runs nothing twice.
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 0 });
  });

  it('keeps the cursor and the push when a commit fails (nothing is skipped)', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.store.recordPush({ messageId: 'p1', account: ACCOUNT, historyId: '101' }, NOW);
    t.failEmits(true);
    await expect(t.sync.request()).rejects.toThrow('store unavailable');
    expect(t.store.state(ACCOUNT).cursor).toBe('100');
    expect(t.store.pendingPushes(ACCOUNT)).toHaveLength(1);
    t.failEmits(false);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
  });

  it('without a cursor reads the recent messages instead of guessing a start point', async () => {
    const t = setup();
    t.box.add('m1', 500);
    t.store.recordPush({ messageId: 'p1', account: ACCOUNT, historyId: '500' }, NOW);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.store.state(ACCOUNT).cursor).toBe('500');
    expect(t.store.pendingPushes(ACCOUNT)).toEqual([]);
  });

  it('follows every run of pages to the end before moving the cursor (a burst of five)', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    for (let i = 1; i <= 5; i++) t.box.add(`m${i}`, 100 + i);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 5 });
    expect(t.store.state(ACCOUNT).cursor).toBe('105');
  });

  it('a message Gmail cannot give is skipped and said, the others still run', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('broken-1', 101);
    t.box.add('m2', 102);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.store.state(ACCOUNT)).toMatchObject({ cursor: '102' });
    expect(t.store.state(ACCOUNT).lastError).toBeUndefined();
  });

  it('an expired cursor falls back to the recent messages since the last sync, then a fresh cursor', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.store.recordSync(ACCOUNT, NOW, undefined);
    t.box.add('m1', 900);
    t.box.expire();
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.store.state(ACCOUNT).cursor).toBe('900');
  });

  it('a refused authorisation stops the mailbox, records it and tells the owner once', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.fail({ kind: 'needs_consent' });
    expect(await t.sync.request()).toEqual({ kind: 'waiting', reason: 'needs_consent' });
    expect(await t.sync.request()).toEqual({ kind: 'waiting', reason: 'needs_consent' });
    expect(t.store.state(ACCOUNT).needsConsent).toBe(true);
    expect(t.notes).toHaveLength(1);
    expect(t.notes[0]).toContain('hookgate gmail setup');
    // A new refresh token (setup run again) lifts the stop at the next sync.
    t.box.fail(undefined);
    t.newToken();
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 0 });
    expect(t.store.state(ACCOUNT).needsConsent).toBe(false);
  });

  it('a rate limit waits with its Retry-After and moves nothing', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.box.fail({ kind: 'backoff', retryAfterMs: 30_000 });
    expect(await t.sync.request()).toEqual({
      kind: 'waiting',
      reason: 'backoff',
      retryAfterMs: 30_000,
    });
    expect(t.store.state(ACCOUNT)).toMatchObject({ cursor: '100', lastError: 'backoff' });
  });
});
