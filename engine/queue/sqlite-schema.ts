/**
 * The SQLite store's file, schema and connection settings, shared by the
 * writer thread and the readers.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';

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

/** Open the store file with hookgate's settings; `create` also creates the schema. */
export function openDatabase(
  dataDir: string,
  options: { create: boolean; readOnly?: boolean },
): DatabaseSync {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), {
    readOnly: options.readOnly ?? false,
  });
  db.exec('PRAGMA busy_timeout = 5000');
  if (options.readOnly) return db;
  db.exec('PRAGMA journal_mode = WAL');
  // FULL: a committed (and so answered) action survives power loss, not only a crash.
  db.exec('PRAGMA synchronous = FULL');
  if (options.create) db.exec(SCHEMA);
  return db;
}
