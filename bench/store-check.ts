/**
 * After-the-fact checks on what hookgate stored: how many actions the store
 * holds (the SQLite file opened with node:sqlite, or the PostgreSQL database
 * queried, once the servers were SIGKILLed) and how many lines the request
 * log got.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { REFERENCE_FILE, REFERENCE_TABLE } from './durable-reference-server.ts';

/** Number of rows the durable reference server committed in `dataDir`. */
export function countReferenceRows(dataDir: string): number {
  const db = new DatabaseSync(path.join(dataDir, REFERENCE_FILE));
  try {
    const row = db.prepare(`SELECT count(*) AS n FROM ${REFERENCE_TABLE}`).get() as { n: number };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** Number of rows in the `actions` table of the store in `dataDir`. */
export function countStoredActions(dataDir: string): number {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE));
  try {
    const row = db.prepare('SELECT count(*) AS n FROM actions').get() as { n: number };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** What a PostgreSQL database holds once its instances are gone. */
export type PostgresCounts = {
  /** Rows in the `actions` table. */
  actions: number;
  /** Transactions committed in the database since it was created (schema setup included). */
  commits: number;
};

// A killed instance's backends end when they read the closed socket; on a loaded machine that
// can take a while.
const BACKENDS_GONE_MS = 15_000;

/**
 * Count the actions in the PostgreSQL database at `url`, and its committed transactions once
 * the killed instances' backends have ended (a backend reports its counters when it exits).
 */
export async function countPostgresStore(url: string): Promise<PostgresCounts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + BACKENDS_GONE_MS;
    let delayMs = 20;
    for (;;) {
      const others = await client.query<{ n: string }>(
        'SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      );
      if (Number(others.rows[0]?.n) === 0 || Date.now() > deadline) break;
      // Polling a condition: the backends notice the closed sockets on their own.
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 500);
    }
    // Counted once nothing can commit any more: a killed instance's last COMMIT may still be
    // finishing in its backend.
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM actions');
    // The counters the ended backends reported (this connection's own are not in yet).
    const stats = await client.query<{ n: string }>(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()',
    );
    return { actions: Number(rows[0]?.n), commits: Number(stats.rows[0]?.n) };
  } finally {
    await client.end();
  }
}

/** Number of lines in a log file (0 when it does not exist). */
export function countLines(file: string): number {
  try {
    const text = readFileSync(file, 'utf8');
    let lines = 0;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
    return lines;
  } catch {
    return 0;
  }
}
