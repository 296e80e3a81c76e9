/**
 * The store's group commit: every request handed over since the last COMMIT
 * goes into one transaction, so durability costs one fsync per group. Each
 * request's rows go in under a savepoint (a lone wake's two rows with their
 * undo instead), so a request is stored whole or not at all. A request whose key is already held stores nothing and gets
 * the holder's record back: being the only writer of acceptances, this
 * connection makes the check and the insert one step.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { KeepKeys } from '../../queue/action-store.ts';
import { storedEventText } from '../stored-event.ts';
import { findKey, prepareKeyLookup } from './key-records.ts';
import { openDatabase } from './schema.ts';

/** One action row, serialised by the accepting side. */
export type WriteRow = {
  id: string;
  kind: string;
  hook: string;
  sessionKey: string | null;
  receivedAt: string;
  json: string;
  /** A wake applied as it is stored: stored done, with this event in the main session. */
  event?: WakeEvent;
};
/** The system event a wake applied at acceptance appends. */
export type WakeEvent = { sessionKey: string; text: string; trusted: boolean; at: string };
export type WriteKey = {
  key: string;
  fingerprint: string;
  actionId: string;
  response: string;
  createdAtMs: number;
  /** An older record of the key has expired: it is replaced, not answered. */
  notBeforeMs: number;
};
/** A key's stored record, as the accepting side reads it. */
export type KeyRecord = Omit<WriteKey, 'notBeforeMs'>;
/** One request's result: stored, refused (`error`), or answered by a key's earlier record. */
export type WriteResult = { error?: Error; previous?: KeyRecord };
/** One request: its action rows and its keys, stored whole or not at all. */
export type WriteItem = { rows: WriteRow[]; keys?: readonly WriteKey[] };

/** The one connection that stores acceptances. */
export type GroupWriter = {
  /** Store every item in one transaction; one result per item, in the items' order. */
  commit(items: readonly WriteItem[]): WriteResult[];
  /** Forget idempotency records older than `beforeMs` (see ActionStore.pruneIdempotency). */
  prune(beforeMs: number, keep?: KeepKeys): number;
  close(): void;
};

const DONE_OUTCOME = JSON.stringify({ status: 'ok' });
const WRITER_BUSY_TIMEOUT_MS = 1_000;

/** Open the writing connection (creating and migrating the schema when needed). */
export function openGroupWriter(dataDir: string): GroupWriter {
  const db = openDatabase(dataDir, { create: true });
  // This connection writes on the event loop: a lock another process holds (a command-line
  // write) is waited for at most this long (the loop waits with it), then the group fails.
  db.exec(`PRAGMA busy_timeout = ${WRITER_BUSY_TIMEOUT_MS}`);
  return createGroupWriter(db);
}

function createGroupWriter(db: DatabaseSync): GroupWriter {
  const insertAction = db.prepare(
    'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
  );
  // A wake applied as it is stored: one attempt, done, as the worker would have left it.
  const insertDoneWake = db.prepare(
    `INSERT INTO actions (id, kind, hook, session_key, received_at, action, state, attempts, started_at, finished_at, outcome)
     VALUES (?, 'wake', ?, NULL, ?, ?, 'done', 1, ?, ?, ?)`,
  );
  const insertEvent = db.prepare(
    "INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at) VALUES (?, ?, 'wake', ?, ?, ?)",
  );
  const deleteAction = db.prepare('DELETE FROM actions WHERE seq = ?');
  // An expired key (outside the window) is replaced.
  const insertKey = db.prepare(
    'INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, action_id, response, created_at_ms) VALUES (?, ?, ?, ?, ?)',
  );
  // ?1 before, ?2 a prefix kept longer, ?3 since when (a prefix of '' with ?3 = ?1 keeps nothing).
  const deleteKeys = db.prepare(
    'DELETE FROM idempotency_keys WHERE created_at_ms < ?1 AND NOT (substr(key, 1, length(?2)) = ?2 AND created_at_ms >= ?3)',
  );
  const selectKey = prepareKeyLookup(db);

  /** The first live record among a request's keys (this group's earlier requests included). */
  function heldKey(keys: readonly WriteKey[]): KeyRecord | undefined {
    for (const { key, notBeforeMs } of keys) {
      const found = findKey(selectKey, key, notBeforeMs);
      if (found) return found;
    }
    return undefined;
  }

  /** The action's row; its rowid. */
  function insertActionRow(row: WriteRow): number | bigint {
    const { event } = row;
    if (!event) {
      return insertAction.run(row.id, row.kind, row.hook, row.sessionKey, row.receivedAt, row.json)
        .lastInsertRowid;
    }
    return insertDoneWake.run(
      row.id,
      row.hook,
      row.receivedAt,
      row.json,
      event.at,
      event.at,
      DONE_OUTCOME,
    ).lastInsertRowid;
  }

  function insertEventOf({ id, event }: WriteRow): void {
    if (!event) return;
    insertEvent.run(
      event.sessionKey,
      storedEventText(event.text, event.trusted),
      id,
      event.trusted ? 1 : 0,
      event.at,
    );
  }

  function insertRow(row: WriteRow): void {
    insertActionRow(row);
    insertEventOf(row);
  }

  /** A wake alone: its two rows without a savepoint, the first deleted if the second fails. */
  function insertWakeAlone(row: WriteRow): void {
    const seq = insertActionRow(row);
    try {
      insertEventOf(row);
    } catch (err) {
      // The event's failure ended the whole transaction: nothing is left to undo.
      if (!db.isTransaction) throw err;
      try {
        deleteAction.run(seq);
      } catch (undoErr) {
        // The wake cannot be taken back alone: the whole group is refused instead.
        if (db.isTransaction) db.exec('ROLLBACK');
        throw new AggregateError(
          [err, undoErr],
          `a wake was neither stored whole (${(err as Error).message}) nor undone (${(undoErr as Error).message})`,
        );
      }
      throw err;
    }
  }

  function insertRows(item: WriteItem): void {
    for (const row of item.rows) insertRow(row);
    for (const { key, fingerprint, actionId, response, createdAtMs } of item.keys ?? []) {
      insertKey.run(key, fingerprint, actionId, response, createdAtMs);
    }
  }

  function insertItem(item: WriteItem): void {
    const [only] = item.rows;
    if (item.rows.length === 1 && only && !item.keys) {
      // One statement is atomic on its own. A lone wake's two rows are undone by deleting the
      // first if the second fails: a savepoint per wake cost about a tenth of its acceptance.
      if (only.event) insertWakeAlone(only);
      else insertRows(item);
      return;
    }
    db.exec('SAVEPOINT one');
    try {
      insertRows(item);
      db.exec('RELEASE one');
    } catch (err) {
      db.exec('ROLLBACK TO one');
      db.exec('RELEASE one');
      throw err;
    }
  }

  return {
    commit(items) {
      const results: WriteResult[] = [];
      try {
        db.exec('BEGIN IMMEDIATE');
        for (const item of items) {
          try {
            const previous = item.keys ? heldKey(item.keys) : undefined;
            if (previous) {
              results.push({ previous });
              continue;
            }
            insertItem(item);
            results.push({});
          } catch (err) {
            // An error that ended the whole transaction (I/O, memory): nothing of the group is
            // kept, and no later item may go in outside it.
            if (!db.isTransaction) throw err;
            results.push({ error: err as Error });
          }
        }
        db.exec('COMMIT');
      } catch (err) {
        if (db.isTransaction) db.exec('ROLLBACK');
        // Nothing of the group was kept: every request of it is refused.
        return items.map(() => ({ error: err as Error }));
      }
      return results;
    },
    prune(beforeMs, keep) {
      return Number(
        deleteKeys.run(beforeMs, keep?.prefix ?? '', keep?.sinceMs ?? beforeMs).changes,
      );
    },
    close() {
      db.close();
    },
  };
}
