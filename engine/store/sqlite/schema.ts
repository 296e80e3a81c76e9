/**
 * The SQLite store's file, schema and connection settings, shared by the
 * group writer, the runtime and the readers.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MIGRATIONS } from './migrations.ts';

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
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  action_id TEXT NOT NULL,
  response TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency_keys (created_at_ms);
`;

/** The schema version this hookgate reads and writes (PRAGMA user_version). */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length;

/** The schema version of an existing store file, read without changing it. */
export function sqliteSchemaVersion(dataDir: string): number {
  const db = openDatabase(dataDir, { create: false, readOnly: true });
  try {
    return userVersion(db);
  } finally {
    db.close();
  }
}

/**
 * Refuse a store file at another schema version than this hookgate's, for a command that only
 * reads it: never migrated there, as a server of another version may be running on the file.
 */
export function refuseOtherSchemaVersion(dataDir: string): void {
  const version = sqliteSchemaVersion(dataDir);
  if (version === SQLITE_SCHEMA_VERSION) return;
  throw new Error(
    `the store in ${dataDir} is at schema version ${version}; this hookgate reads version ${SQLITE_SCHEMA_VERSION} (${version < SQLITE_SCHEMA_VERSION ? 'start this hookgate once to migrate it' : 'use the hookgate that serves it'})`,
  );
}

function userVersion(db: DatabaseSync): number {
  return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
}

function migrate(db: DatabaseSync, dataDir: string): void {
  const found = userVersion(db);
  // A newer hookgate's store: writing rows of this version's shape into it could damage it.
  if (found > MIGRATIONS.length) {
    throw new Error(
      `the store in ${dataDir} is at schema version ${found}; this hookgate reads version ${MIGRATIONS.length} (use the hookgate that serves it)`,
    );
  }
  if (found === MIGRATIONS.length) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    // Read under the write lock: the group writer, the runtime and the CLI open the file concurrently.
    for (let next = userVersion(db); next < MIGRATIONS.length; next++) {
      db.exec(MIGRATIONS[next] as string);
      db.exec(`PRAGMA user_version = ${next + 1}`);
    }
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
}

/** Open the store file with hookgate's settings; `create` also creates the schema. */
export function openDatabase(
  dataDir: string,
  options: { create: boolean; readOnly?: boolean },
): DatabaseSync {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), {
    readOnly: options.readOnly ?? false,
  });
  db.exec('PRAGMA busy_timeout = 5000');
  if (options.readOnly) return tempInMemory(db);
  db.exec('PRAGMA journal_mode = WAL');
  // FULL: a committed (and so answered) action survives power loss, not only a crash.
  db.exec('PRAGMA synchronous = FULL');
  // Checkpoints stall whoever commits: every 10,000 pages (about 40 MB of WAL) rather than
  // SQLite's 1,000 measured about 15% more accepted requests per second (bench/).
  db.exec('PRAGMA wal_autocheckpoint = 10000');
  if (options.create) {
    try {
      if (userVersion(db) <= MIGRATIONS.length) db.exec(SCHEMA);
      migrate(db, dataDir);
    } catch (err) {
      db.close();
      throw err;
    }
  }
  // Only after the migrations: an index one builds sorts the whole table, which may spill.
  return tempInMemory(db);
}

/**
 * Savepoint journals (the runtime's batch undoes one write alone) and sorts kept in memory:
 * past 64 KiB SQLite spilled them to an unnamed file in /var/tmp (open, write, unlink, close
 * per batch), which put request text outside the data directory and cost about 5% of a run.
 */
function tempInMemory(db: DatabaseSync): DatabaseSync {
  db.exec('PRAGMA temp_store = MEMORY');
  return db;
}
