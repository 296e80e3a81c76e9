/**
 * The store's writer thread. It owns the only write connection and commits
 * appends in groups: everything that arrived while the previous COMMIT was
 * syncing joins the next transaction. Running here, the fsync never blocks
 * the event loop that parses requests. Each request's rows go in under a
 * savepoint, so a request is stored whole or not at all. A request whose key
 * is already held stores nothing and gets the holder's record back: being
 * the only writer, this thread makes the check and the insert one step.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { findKey, prepareKeyLookup } from './key-records.ts';
import { openDatabase } from './schema.ts';

/** One request's rows, serialised by the main thread. */
export type WriteRow = {
  id: string;
  kind: string;
  hook: string;
  sessionKey: string | null;
  receivedAt: string;
  json: string;
};
export type WriteKey = {
  key: string;
  fingerprint: string;
  actionId: string;
  response: string;
  createdAtMs: number;
  /** An older record of the key has expired: it is replaced, not answered. */
  notBeforeMs: number;
};
/** A key's stored record, as the main thread reads it. */
export type KeyRecord = Omit<WriteKey, 'notBeforeMs'>;
/** One request's result: stored, refused (`error`), or answered by a key's earlier record. */
export type WriteResult = { ticket: number; error?: string; previous?: KeyRecord };
export type WriteItem = { ticket: number; rows: WriteRow[]; keys?: readonly WriteKey[] };

/** Messages from the main thread. */
export type ToWriter =
  | { type: 'append'; items: WriteItem[] }
  | { type: 'prune'; ticket: number; beforeMs: number }
  | { type: 'close' };

/** Messages to the main thread. */
export type FromWriter =
  | { type: 'ready' }
  | { type: 'committed'; results: WriteResult[] }
  | { type: 'pruned'; ticket: number; count: number }
  | { type: 'closed' };

const port = parentPort;
if (!port) throw new Error('sqlite-writer runs as a worker thread');

const db = openDatabase((workerData as { dataDir: string }).dataDir, { create: true });
// Checkpoints stall this writer: every 10,000 pages (about 40 MB of WAL) rather than SQLite's 1,000
// measured about 15% more accepted requests per second (bench/).
db.exec('PRAGMA wal_autocheckpoint = 10000');
const insertAction = db.prepare(
  'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
);
// An expired key (outside the window) is replaced.
const insertKey = db.prepare(
  'INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, action_id, response, created_at_ms) VALUES (?, ?, ?, ?, ?)',
);
const deleteKeys = db.prepare('DELETE FROM idempotency_keys WHERE created_at_ms < ?');
const selectKey = prepareKeyLookup(db);

/** The first live record among a request's keys (this batch's earlier requests included). */
function heldKey(keys: readonly WriteKey[]): KeyRecord | undefined {
  for (const { key, notBeforeMs } of keys) {
    const found = findKey(selectKey, key, notBeforeMs);
    if (found) return found;
  }
  return undefined;
}

let queue: WriteItem[] = [];
let scheduled = false;

function send(message: FromWriter): void {
  port?.postMessage(message);
}

function insertRows(item: WriteItem): void {
  for (const row of item.rows) {
    insertAction.run(row.id, row.kind, row.hook, row.sessionKey, row.receivedAt, row.json);
  }
  for (const { key, fingerprint, actionId, response, createdAtMs } of item.keys ?? []) {
    insertKey.run(key, fingerprint, actionId, response, createdAtMs);
  }
}

function insertItem(item: WriteItem): void {
  // One statement is atomic on its own; a savepoint is only needed to undo several.
  if (item.rows.length === 1 && !item.keys) {
    insertRows(item);
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

/** Commit every queued item in one transaction and report each one's outcome. */
function flush(): void {
  scheduled = false;
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  const results: WriteResult[] = [];
  try {
    db.exec('BEGIN IMMEDIATE');
    for (const item of batch) {
      try {
        const previous = item.keys ? heldKey(item.keys) : undefined;
        if (previous) {
          results.push({ ticket: item.ticket, previous });
          continue;
        }
        insertItem(item);
        results.push({ ticket: item.ticket });
      } catch (err) {
        results.push({ ticket: item.ticket, error: (err as Error).message });
      }
    }
    db.exec('COMMIT');
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    const error = (err as Error).message;
    send({ type: 'committed', results: batch.map((item) => ({ ticket: item.ticket, error })) });
    return;
  }
  send({ type: 'committed', results });
}

port.on('message', (message: ToWriter) => {
  if (message.type === 'append') {
    for (const item of message.items) queue.push(item);
    if (!scheduled) {
      scheduled = true;
      // Let every message already delivered join this transaction.
      setImmediate(flush);
    }
  } else if (message.type === 'prune') {
    flush();
    send({
      type: 'pruned',
      ticket: message.ticket,
      count: Number(deleteKeys.run(message.beforeMs).changes),
    });
  } else {
    flush();
    db.close();
    send({ type: 'closed' });
    port.close();
  }
});

send({ type: 'ready' });
