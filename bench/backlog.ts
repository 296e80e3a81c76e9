/**
 * The work a target leaves queued when its load stops: agent runs still
 * queued or running, and main-session events no heartbeat consumed yet.
 * The bench waits for the server to finish it (bounded) and charges its CPU
 * to the target, so a row whose runs lag behind acceptance shows what an
 * accepted request costs with its run, not only the runs done while loaded.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';

export type Backlog = { runs: number; events: number };

const OPEN_RUNS = "SELECT count(*) AS n FROM actions WHERE state IN ('queued', 'running')";
// Pending as a heartbeat reads them: not marked, and after the last range consumed.
const PENDING_EVENTS = `SELECT count(*) AS n FROM system_events e
  WHERE consumed_by IS NULL AND seq > COALESCE(
    (SELECT MAX(last_seq) FROM event_consumption c WHERE c.session_key = e.session_key), 0)`;

/** What is left to do in the SQLite store of `dataDir` (read beside the running server). */
export function backlogOf(dataDir: string): Backlog {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), { readOnly: true, timeout: 5_000 });
  try {
    const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n);
    return { runs: count(OPEN_RUNS), events: count(PENDING_EVENTS) };
  } finally {
    db.close();
  }
}

/** What the drain found and how long the server took to finish it. */
export type Drain = {
  /** Left when the load stopped. */
  left: Backlog;
  /** Still left when the drain gave up (zero when it finished). */
  remaining: Backlog;
  seconds: number;
};

const POLL_MS = 200;

/**
 * Wait until the store of `dataDir` has nothing left to do, or `limitSeconds` passed. Polling
 * a condition of another process's store: there is no event to wait for.
 */
export async function drainBacklog(dataDir: string, limitSeconds: number): Promise<Drain> {
  const started = performance.now();
  const left = backlogOf(dataDir);
  let remaining = left;
  while (remaining.runs + remaining.events > 0) {
    if (performance.now() - started > limitSeconds * 1000) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    remaining = backlogOf(dataDir);
  }
  return { left, remaining, seconds: (performance.now() - started) / 1000 };
}
