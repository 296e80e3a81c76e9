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
  fallbackSince,
  ledgerFloorMs,
  MAX_SYNC_MESSAGES,
  MAX_SYNC_PAGES,
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
  let endless: 'same' | 'fresh' | 'crowded' | undefined;
  const calls = { changes: 0, messages: 0 };
  const source: MailSource = {
    async changes(cursor, pageToken) {
      calls.changes++;
      if (failure) return failure;
      if (expired) return { kind: 'cursor_expired' };
      if (endless) {
        // A turn of the event loop per page, as an answer from the network would take.
        await new Promise((resolve) => setImmediate(resolve));
        const next = { pageToken: endless === 'same' ? 'again' : `page-${calls.changes}` };
        // Crowded: each page names 30,000 new messages (a page of 500 records of 60 each).
        const messageIds =
          endless === 'crowded'
            ? Array.from({ length: 30_000 }, (_, i) => `crowd-${calls.changes}-${i}`)
            : [];
        return { kind: 'ok', value: { messageIds, next, pages: 1 } };
      }
      const after = history.filter((h) => h.historyId > BigInt(cursor));
      const last = history.at(-1)?.historyId ?? BigInt(cursor);
      // Two ids a run: the sync must follow the page token to the end.
      const from = Number(pageToken ?? 0);
      const ids = after.slice(from, from + 2).map((h) => h.id);
      const next =
        from + 2 < after.length ? { pageToken: String(from + 2) } : { historyId: String(last) };
      return { kind: 'ok', value: { messageIds: ids, next, pages: 1 } };
    },
    async message(id) {
      calls.messages++;
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
    calls,
    /**
     * History answers pages with a next page for ever: empty, with the same token or a new one each
     * time, or (crowded) each naming 30,000 new messages.
     */
    endless(kind: 'same' | 'fresh' | 'crowded') {
      endless = kind;
    },
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
    // The mailbox waits (tried again later), its reason shown; nothing is skipped.
    expect(await t.sync.request()).toEqual({ kind: 'waiting', reason: 'failed' });
    expect(t.store.state(ACCOUNT).lastError).toBe('sync failed: internal');
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

  it('a message Gmail cannot give is skipped and said (the last error, for gmail status), the others still run', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('broken-1', 101);
    t.box.add('m2', 102);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.store.state(ACCOUNT)).toMatchObject({ cursor: '102' });
    // The sync went through (its success time is set), yet the skip is not wiped by it.
    expect(t.store.state(ACCOUNT).lastSuccessAtMs).toEqual(expect.any(Number));
    expect(t.store.state(ACCOUNT).lastError).toMatch(/^message broken-1 skipped: /);
    // The next sync that skips nothing clears it.
    t.box.add('m3', 103);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
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

  it('the fallback reads from an hour before the last good sync, however long ago; the ledger keeps the keys of mail that ran back to there', () => {
    const HOUR = 60 * 60 * 1000;
    const DAY = 24 * HOUR;
    expect(fallbackSince(NOW - DAY, NOW)).toBe(NOW - DAY - HOUR);
    expect(fallbackSince(NOW - 9 * DAY, NOW)).toBe(NOW - 9 * DAY - HOUR);
    expect(fallbackSince(undefined, NOW)).toBe(NOW - HOUR);
    expect(ledgerFloorMs(NOW - 9 * DAY)).toBe(NOW - 9 * DAY - HOUR);
    expect(ledgerFloorMs(undefined)).toBeUndefined();
  });

  it("a cursor ahead of the mailbox's own history id (set from a wrong answer): the sync goes on from the recent messages, with a cursor of the mailbox's, and tells the owner", async () => {
    const t = setup();
    t.box.add('m1', 101);
    t.store.advanceCursor(ACCOUNT, '101');
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 0 });
    // A wrong answer put the cursor far ahead; mail keeps coming at the mailbox's own ids.
    t.store.advanceCursor(ACCOUNT, '18446744073709551615');
    t.box.add('m2', 102);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 2 });
    expect(t.store.state(ACCOUNT).cursor).toBe('102');
    expect(t.notes).toHaveLength(1);
    expect(t.notes[0]).toContain("Gmail's history is behind the stored cursor");
    t.box.add('m3', 103);
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
  });

  it('a history answering the same next page token for ever (the provider looping): the token is not followed twice, the sync goes on from the recent messages and tells the owner', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.box.endless('same');
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.box.calls.changes).toBe(2);
    expect(t.store.state(ACCOUNT).cursor).toBe('101');
    expect(t.notes).toHaveLength(1);
    expect(t.notes[0]).toContain('could not read the mailbox history to its end');
  });

  it('a history of new page tokens without end: the sync follows at most MAX_SYNC_PAGES pages, then goes on from the recent messages', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.box.endless('fresh');
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    expect(t.box.calls.changes).toBe(MAX_SYNC_PAGES);
    expect(t.store.state(ACCOUNT).cursor).toBe('101');
    expect(t.notes).toEqual([expect.stringContaining(`ran past ${MAX_SYNC_PAGES} pages`)]);
  });

  it('a history whose pages each name 30,000 new messages: the sync reads at most MAX_SYNC_MESSAGES of them, then goes on from the recent messages and tells the owner', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.add('m1', 101);
    t.box.endless('crowded');
    expect(await t.sync.request()).toEqual({ kind: 'synced', emitted: 1 });
    // The first page's 30,000 and the recent m1; the second page would pass the bound.
    expect(t.box.calls.messages).toBe(30_001);
    expect(t.box.calls.messages).toBeLessThanOrEqual(MAX_SYNC_MESSAGES + 1);
    expect(t.store.state(ACCOUNT).cursor).toBe('101');
    expect(t.notes).toEqual([
      expect.stringContaining(`more than ${MAX_SYNC_MESSAGES} new messages`),
    ]);
  });

  it('a stop while the history gives only empty pages: the sync ends after the page in progress', async () => {
    const t = setup();
    t.store.advanceCursor(ACCOUNT, '100');
    t.box.endless('fresh');
    const outcome = t.sync.request();
    while (t.box.calls.changes < 5) await new Promise((resolve) => setImmediate(resolve));
    t.sync.stop();
    const atStop = t.box.calls.changes;
    await t.sync.idle();
    expect(await outcome).toEqual({ kind: 'waiting', reason: 'stopping' });
    expect(t.box.calls.changes - atStop).toBeLessThanOrEqual(1);
    expect(t.store.state(ACCOUNT).cursor).toBe('100');
  });
});
