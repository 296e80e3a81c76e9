/**
 * The embedded action store on node:sqlite (WAL, synchronous=FULL).
 * Appends are grouped: every append that arrives before the next flush joins
 * one transaction, so durability costs one fsync per batch, not per request.
 * Each append's promise resolves only after its COMMIT returned.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { Action } from '../../schemas/action.ts';
import type {
  AcceptedRecord,
  ActionState,
  ActionStore,
  IdempotencyRecord,
  StoredAction,
} from './action-store.ts';

/** File name of the store inside the data directory. */
export const STORE_FILE = 'hookgate.db';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS actions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  hook TEXT NOT NULL,
  session_key TEXT,
  state TEXT NOT NULL DEFAULT 'queued',
  attempts INTEGER NOT NULL DEFAULT 0,
  received_at TEXT NOT NULL,
  action TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS actions_state ON actions (state, seq);
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  action_id TEXT NOT NULL,
  response TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency_keys (created_at_ms);
`;

type Pending = { record: AcceptedRecord; resolve: () => void; reject: (err: unknown) => void };

export type SqliteStoreOptions = {
  /** Wait this long for more appends before committing; 0 = next event-loop turn. */
  commitDelayMs?: number;
  /** Open without creating (for read-only commands). */
  mustExist?: boolean;
};

/** Open (or create) the store in a data directory. */
export function openSqliteStore(dataDir: string, options: SqliteStoreOptions = {}): ActionStore {
  if (!options.mustExist) mkdirSync(dataDir, { recursive: true });
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE));
  db.exec('PRAGMA journal_mode = WAL');
  // FULL: a committed (and so answered) action survives power loss, not only a crash.
  db.exec('PRAGMA synchronous = FULL');
  db.exec('PRAGMA busy_timeout = 5000');
  db.exec(SCHEMA);
  return new SqliteActionStore(db, options.commitDelayMs ?? 0);
}

class SqliteActionStore implements ActionStore {
  private readonly db: DatabaseSync;
  private readonly delayMs: number;
  private readonly insertAction: StatementSync;
  private readonly insertKey: StatementSync;
  private readonly selectKey: StatementSync;
  private readonly deleteKeys: StatementSync;
  private readonly selectActions: StatementSync;
  private pending: Pending[] = [];
  private scheduled = false;
  private closed = false;

  constructor(db: DatabaseSync, delayMs: number) {
    this.db = db;
    this.delayMs = delayMs;
    this.insertAction = db.prepare(
      'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.insertKey = db.prepare(
      'INSERT OR REPLACE INTO idempotency_keys (key, fingerprint, action_id, response, created_at_ms) VALUES (?, ?, ?, ?, ?)',
    );
    this.selectKey = db.prepare(
      'SELECT key, fingerprint, action_id, response, created_at_ms FROM idempotency_keys WHERE key = ? AND created_at_ms >= ?',
    );
    this.deleteKeys = db.prepare('DELETE FROM idempotency_keys WHERE created_at_ms < ?');
    this.selectActions = db.prepare(
      'SELECT seq, state, attempts, action FROM actions ORDER BY seq DESC LIMIT ?',
    );
  }

  append(record: AcceptedRecord): Promise<void> {
    if (this.closed) return Promise.reject(new Error('store is closed'));
    return new Promise((resolve, reject) => {
      this.pending.push({ record, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        if (this.delayMs > 0) setTimeout(() => this.flush(), this.delayMs);
        else setImmediate(() => this.flush());
      }
    });
  }

  /** Commit every pending append in one transaction. */
  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const failed = new Map<Pending, unknown>();
    try {
      this.db.exec('BEGIN IMMEDIATE');
      for (const item of batch) {
        // A failed INSERT does not abort the transaction: only that request is refused.
        try {
          this.insertOne(item.record);
        } catch (err) {
          failed.set(item, err);
        }
      }
      this.db.exec('COMMIT');
    } catch (err) {
      if (this.db.isTransaction) this.db.exec('ROLLBACK');
      for (const item of batch) item.reject(err);
      return;
    }
    for (const item of batch) {
      if (failed.has(item)) item.reject(failed.get(item));
      else item.resolve();
    }
  }

  private insertOne({ actions, idempotency }: AcceptedRecord): void {
    this.db.exec('SAVEPOINT one');
    try {
      for (const action of actions) {
        const sessionKey = action.kind === 'agent' ? action.sessionKey : null;
        this.insertAction.run(
          action.id,
          action.kind,
          action.hook,
          sessionKey,
          action.receivedAt,
          JSON.stringify(action),
        );
      }
      if (idempotency) {
        const { key, fingerprint, actionId, response, createdAtMs } = idempotency;
        this.insertKey.run(key, fingerprint, actionId, response, createdAtMs);
      }
      this.db.exec('RELEASE one');
    } catch (err) {
      // Undo the whole request: all of its actions and its key, or nothing.
      this.db.exec('ROLLBACK TO one');
      this.db.exec('RELEASE one');
      throw err;
    }
  }

  async findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined> {
    const row = this.selectKey.get(key, notBeforeMs) as Record<string, string | number> | undefined;
    if (!row) return undefined;
    return {
      key: row['key'] as string,
      fingerprint: row['fingerprint'] as string,
      actionId: row['action_id'] as string,
      response: row['response'] as string,
      createdAtMs: Number(row['created_at_ms']),
    };
  }

  async pruneIdempotency(beforeMs: number): Promise<number> {
    return Number(this.deleteKeys.run(beforeMs).changes);
  }

  async listActions({ limit }: { limit: number }): Promise<StoredAction[]> {
    const rows = this.selectActions.all(limit) as Array<Record<string, string | number>>;
    return rows.map((row) => ({
      seq: Number(row['seq']),
      state: row['state'] as ActionState,
      attempts: Number(row['attempts']),
      action: JSON.parse(row['action'] as string) as Action,
    }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
  }
}
