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
import { PENDING_COUNT } from '../engine/store/sqlite/event-consumption.ts';

export type Backlog = { runs: number; events: number };

const OPEN_RUNS = "SELECT count(*) AS n FROM actions WHERE state IN ('queued', 'running')";
// The bench's servers keep the default main session, the one heartbeats consume.
const MAIN_KEY = 'main';

/** What is left to do in the SQLite store of `dataDir` (read beside the running server). */
export function backlogOf(dataDir: string): Backlog {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), { readOnly: true, timeout: 5_000 });
  try {
    const count = (sql: string, ...args: string[]) =>
      Number((db.prepare(sql).get(...args) as { n: number }).n);
    // Pending as the heartbeat reads them: the store's own definition.
    return { runs: count(OPEN_RUNS), events: count(PENDING_COUNT, MAIN_KEY) };
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
