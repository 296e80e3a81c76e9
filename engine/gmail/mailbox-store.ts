/**
 * The mail-notification flow's durable state, in the store file: each
 * watched mailbox's cursor (a Gmail history id, only ever moved forward) and
 * watch, and each Pub/Sub push received until a sync has covered it. A push
 * is recorded before it is acknowledged; a redelivered push (same message id)
 * is one row. A connection of its own; every write is one short statement.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { openDatabase, refuseOtherSchemaVersion } from '../store/sqlite/schema.ts';
import { isLaterHistoryId, pushIsNew } from './history-id.ts';

/** A mailbox as the flow knows it. */
export type MailboxState = {
  account: string;
  /** The history id synced up to (decimal string), once known. */
  cursor: string | undefined;
  watchExpirationMs: number | undefined;
  watchedAtMs: number | undefined;
  lastPushAtMs: number | undefined;
  /** The last sync attempt, successful or not. */
  lastSyncAtMs: number | undefined;
  /** The last sync that read the mailbox up to its cursor. */
  lastSuccessAtMs: number | undefined;
  lastError: string | undefined;
  /** Why the last attempt at a watch failed; cleared by a watch made. */
  watchError: string | undefined;
  /** The refresh token was refused (invalid_grant): the operator must run the consent again. */
  needsConsent: boolean;
  /** A hash of the refresh token that was refused (a new one lifts needsConsent). */
  refusedTokenHash: string | undefined;
};

/** The state of a mailbox nothing was recorded for yet (no watch, no cursor, no error). */
export function unrecordedMailbox(account: string): MailboxState {
  return {
    account,
    cursor: undefined,
    watchExpirationMs: undefined,
    watchedAtMs: undefined,
    lastPushAtMs: undefined,
    lastSyncAtMs: undefined,
    lastSuccessAtMs: undefined,
    lastError: undefined,
    watchError: undefined,
    needsConsent: false,
    refusedTokenHash: undefined,
  };
}

/** A recorded push: which mailbox changed, up to which history id. */
export type RecordedPush = { messageId: string; account: string; historyId: string };
/** A push waiting for a sync, with when it was recorded (epoch ms). */
export type PendingPush = RecordedPush & { receivedAtMs: number };

export type MailboxStore = {
  /** Record a push; false when its message id was recorded before (a redelivery). */
  recordPush(push: RecordedPush, nowMs: number): boolean;
  /** Pushes of a mailbox that no sync has covered yet, oldest first (at most 1000). */
  pendingPushes(account: string): PendingPush[];
  /** How many pushes wait for a sync. */
  pendingCount(account: string): number;
  /** Forget pushes a sync covered before `beforeMs` (a redelivery after that is synced again). */
  pruneSynced(beforeMs: number): number;
  /** Mark pushes covered by a sync. */
  markSynced(messageIds: readonly string[], nowMs: number): void;
  state(account: string): MailboxState;
  /** Move the cursor forward (never back); returns the cursor now stored. */
  advanceCursor(account: string, historyId: string): string;
  /** Replace the cursor (after an expired one: a fresh start point). */
  resetCursor(account: string, historyId: string): void;
  recordWatch(account: string, expirationMs: number, nowMs: number): void;
  /** A watch that could not be made (kept until one is; also the last error). */
  recordWatchFailure(account: string, reason: string): void;
  /** A sync attempt; without an error it read the mailbox up to its cursor. */
  recordSync(account: string, nowMs: number, error: string | undefined): void;
  /** An error that is not a sync's (a sync skipped), for `gmail status`. */
  recordError(account: string, error: string): void;
  /** Mark (with the refused token's hash) or lift the need for a new consent. */
  setNeedsConsent(account: string, needs: boolean, refusedTokenHash?: string): void;
  close(): void;
};

type Row = Record<string, unknown>;

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
const int = (value: unknown) =>
  typeof value === 'number' || typeof value === 'bigint' ? Number(value) : undefined;

/** Open the mailbox state in the data directory's store file. */
export function openMailboxStore(dataDir: string): MailboxStore {
  const db: DatabaseSync = openDatabase(dataDir, { create: true });
  // Pushes are acknowledged once recorded: this row must survive a crash (WAL, FULL).
  const ensure = db.prepare('INSERT OR IGNORE INTO gmail_mailboxes (account) VALUES (?)');
  const insertPush = db.prepare(
    'INSERT OR IGNORE INTO gmail_pushes (message_id, account, history_id, received_at_ms) VALUES (?, ?, ?, ?)',
  );
  const touchPush = db.prepare('UPDATE gmail_mailboxes SET last_push_at_ms = ? WHERE account = ?');
  const pending = db.prepare(
    'SELECT message_id, account, history_id, received_at_ms FROM gmail_pushes WHERE account = ? AND synced_at_ms IS NULL ORDER BY received_at_ms, message_id LIMIT 1000',
  );
  const synced = db.prepare('UPDATE gmail_pushes SET synced_at_ms = ? WHERE message_id = ?');
  const count = db.prepare(
    'SELECT count(*) AS n FROM gmail_pushes WHERE account = ? AND synced_at_ms IS NULL',
  );
  const prune = db.prepare('DELETE FROM gmail_pushes WHERE synced_at_ms < ?');
  const setError = db.prepare('UPDATE gmail_mailboxes SET last_error = ? WHERE account = ?');
  const setSuccess = db.prepare(
    'UPDATE gmail_mailboxes SET last_success_at_ms = ? WHERE account = ?',
  );
  const select = db.prepare('SELECT * FROM gmail_mailboxes WHERE account = ?');
  const setCursor = db.prepare('UPDATE gmail_mailboxes SET cursor = ? WHERE account = ?');
  const setWatch = db.prepare(
    'UPDATE gmail_mailboxes SET watch_expiration_ms = ?, watched_at_ms = ?, watch_error = NULL WHERE account = ?',
  );
  const setWatchError = db.prepare(
    'UPDATE gmail_mailboxes SET watch_error = ?, last_error = ? WHERE account = ?',
  );
  const setSync = db.prepare(
    'UPDATE gmail_mailboxes SET last_sync_at_ms = ?, last_error = ? WHERE account = ?',
  );
  const setConsent = db.prepare(
    'UPDATE gmail_mailboxes SET needs_consent = ?, refused_token_hash = ? WHERE account = ?',
  );
  const run = (statement: StatementSync, ...values: Array<string | number | null>) =>
    statement.run(...values);

  // A read: a mailbox without a row yet is one nothing was recorded for.
  const state = (account: string): MailboxState =>
    stateOf(account, select.get(account) as Row | undefined);

  return {
    recordPush(push, nowMs) {
      ensure.run(push.account);
      const added = insertPush.run(push.messageId, push.account, push.historyId, nowMs).changes > 0;
      // Only a push past the cursor says the mailbox is followed: one at or behind it (late,
      // replayed, or behind a cursor a wrong answer put ahead of the mailbox) leaves the safety
      // net's hour running, so a sync still comes.
      if (pushIsNew(push.historyId, state(push.account).cursor))
        run(touchPush, nowMs, push.account);
      return added;
    },
    pendingPushes(account) {
      return (pending.all(account) as Row[]).map((row) => ({
        messageId: String(row['message_id']),
        account: String(row['account']),
        historyId: String(row['history_id']),
        receivedAtMs: Number(row['received_at_ms']),
      }));
    },
    pendingCount(account) {
      return Number((count.get(account) as Row)['n']);
    },
    pruneSynced(beforeMs) {
      return Number(prune.run(beforeMs).changes);
    },
    markSynced(messageIds, nowMs) {
      for (const id of messageIds) run(synced, nowMs, id);
    },
    state,
    advanceCursor(account, historyId) {
      ensure.run(account);
      const current = state(account).cursor;
      if (current !== undefined && !isLaterHistoryId(historyId, current)) return current;
      run(setCursor, historyId, account);
      return historyId;
    },
    resetCursor(account, historyId) {
      ensure.run(account);
      run(setCursor, historyId, account);
    },
    recordWatch(account, expirationMs, nowMs) {
      ensure.run(account);
      run(setWatch, expirationMs, nowMs, account);
    },
    recordWatchFailure(account, reason) {
      ensure.run(account);
      run(setWatchError, reason, `watch: ${reason}`, account);
    },
    recordSync(account, nowMs, error) {
      ensure.run(account);
      run(setSync, nowMs, error ?? null, account);
      if (error === undefined) run(setSuccess, nowMs, account);
    },
    recordError(account, error) {
      ensure.run(account);
      run(setError, error, account);
    },
    setNeedsConsent(account, needs, refusedTokenHash) {
      ensure.run(account);
      run(setConsent, needs ? 1 : 0, needs ? (refusedTokenHash ?? null) : null, account);
    },
    close() {
      db.close();
    },
  };
}

/** A mailbox's row as its state (no row: nothing recorded yet). Pure. */
function stateOf(account: string, row: Row | undefined): MailboxState {
  if (!row) return unrecordedMailbox(account);
  return {
    account,
    cursor: text(row['cursor']),
    watchExpirationMs: int(row['watch_expiration_ms']),
    watchedAtMs: int(row['watched_at_ms']),
    lastPushAtMs: int(row['last_push_at_ms']),
    lastSyncAtMs: int(row['last_sync_at_ms']),
    lastSuccessAtMs: int(row['last_success_at_ms']),
    lastError: text(row['last_error']),
    watchError: text(row['watch_error']),
    needsConsent: row['needs_consent'] === 1,
    refusedTokenHash: text(row['refused_token_hash']),
  };
}

/**
 * A mailbox's state and how many pushes wait for a sync, read without writing anything (the
 * store opened read-only: `gmail status` changes nothing, not even a row for the mailbox).
 */
export function readMailbox(
  dataDir: string,
  account: string,
): { state: MailboxState; pendingPushes: number } {
  // Read, never migrated: a store of another version may not have these tables as read here.
  refuseOtherSchemaVersion(dataDir);
  const db = openDatabase(dataDir, { create: false, readOnly: true });
  try {
    const row = db.prepare('SELECT * FROM gmail_mailboxes WHERE account = ?').get(account);
    const pending = db
      .prepare('SELECT count(*) AS n FROM gmail_pushes WHERE account = ? AND synced_at_ms IS NULL')
      .get(account) as Row;
    return { state: stateOf(account, row as Row | undefined), pendingPushes: Number(pending['n']) };
  } finally {
    db.close();
  }
}
