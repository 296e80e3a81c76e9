/**
 * What the SQLite runtime store writes per agent run, apart from the server:
 * `npx node bench/run-store.ts [QUEUED] [RUNS]`. With QUEUED /agent actions
 * queued (each its own session, as the bench's /agent target makes them),
 * runs end one transaction at a time, each with the claim of the next (as the
 * worker's hand-off does), for 1, 2, 4 and 8 runs per transaction: WAL frames
 * per transaction, KB written per run and CPU per run (user + kernel), then
 * the pages one transaction of one run writes, by table or index. It turns
 * the checkpoints of the store's own connection off (reached through a cast:
 * a probe, not an interface) so that the WAL's growth is what was written.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import type { RunRow } from '../engine/runtime/runtime-store.ts';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import type { Action } from '../schemas/action.ts';
import { probeAgent } from './probe-actions.ts';
import { countFrames, readFrames, WAL_HEADER } from './wal-frames.ts';

const QUEUED = Number(process.argv[2] ?? 20_000);
const RUNS = Number(process.argv[3] ?? 3_000);

/** A store with QUEUED actions and a WAL that is never checkpointed (its growth is measured). */
async function queuedStore(dir: string): Promise<{ store: SqliteRuntimeStore; db: DatabaseSync }> {
  const accepting = await openSqliteStore(dir);
  for (let at = 0; at < QUEUED; at += 20) {
    await accepting.appendOrGet({ actions: Array.from({ length: 20 }, probeAgent) });
  }
  await accepting.close();
  const store = SqliteRuntimeStore.open(dir);
  // The connection the store writes on: its checkpoints would hide the WAL's growth.
  const db = (store as unknown as { db: DatabaseSync }).db;
  db.exec('PRAGMA wal_autocheckpoint = 0');
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  return { store, db };
}

/** End `rows` (turns and a summary event each) and claim as many next ones, in one transaction. */
async function endAndClaim(store: SqliteRuntimeStore, rows: RunRow[]): Promise<RunRow[]> {
  const ends = rows.map((row) => {
    const action = row.action as Extract<Action, { kind: 'agent' }>;
    return store.finish(
      row,
      'done',
      { status: 'ok', reply: 'done' },
      { sessionKey: 'main', text: 'Hook Bench: done', source: 'hook-summary', trusted: false },
      {
        owner: { agentId: 'main', sessionKey: action.sessionKey, kind: 'agent' },
        prompt: action.prompt ?? '',
        reply: 'done',
      },
    );
  });
  const next = store.claimHeadsAfterEnd(rows.length, new Set());
  await Promise.all(ends);
  return next;
}

async function measure(perTransaction: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-run-store-'));
  try {
    const { store, db } = await queuedStore(dir);
    const wal = path.join(dir, `${STORE_FILE}-wal`);
    const pageSize = Number((db.prepare('PRAGMA page_size').get() as { page_size: number }).page_size);
    let rows = await store.claimHeads(perTransaction, new Set());
    const walBefore = statSync(wal).size;
    const cpu = process.cpuUsage();
    let runs = 0;
    let transactions = 0;
    while (runs < RUNS && rows.length > 0) {
      runs += rows.length;
      transactions++;
      rows = await endAndClaim(store, rows);
    }
    const used = process.cpuUsage(cpu);
    const written = statSync(wal).size - walBefore;
    console.log(
      `${perTransaction} run(s) per transaction: ${(countFrames(written, pageSize) / transactions).toFixed(1)} frames each, ` +
        `${(written / runs / 1024).toFixed(1)} KB written per run, ` +
        `${((used.user + used.system) / runs).toFixed(0)} µs CPU per run (${(used.system / runs).toFixed(0)} kernel)`,
    );
    if (perTransaction === 1) {
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      await endAndClaim(store, rows);
      const bytes = readFileSync(wal);
      const frames = readFrames(bytes.subarray(WAL_HEADER), pageSize, db);
      console.log(
        `  the pages of one such transaction: ${frames.map(({ owner, page }) => `${owner}#${page}`).join(', ')}`,
      );
    }
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const perTransaction of [1, 2, 4, 8]) await measure(perTransaction);
