/**
 * What fair scheduling costs, on real store files: the worker's tick (the
 * queries that find what may run) with a big backlog, and what the session
 * heads add to the group writer's insert. Run: node bench/claim-cost.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DatabaseSync } from 'node:sqlite';
import { openDatabase } from '../engine/store/sqlite/schema.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { median } from './stats.ts';

const BACKLOG = 100_000;
const SESSIONS = 10_000;
const INSERT =
  'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)';
const ACTION = JSON.stringify({ kind: 'agent', message: 'x'.repeat(600) });

function tempStore(): { dir: string; done: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-claim-cost-'));
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Mean microseconds per call of `work` over `runs` calls (after a warm-up). */
function micros(runs: number, work: () => unknown): number {
  for (let i = 0; i < 5; i++) work();
  const started = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) work();
  return Number(process.hrtime.bigint() - started) / 1000 / runs;
}

function fill(db: DatabaseSync, rows: Array<[string, string | null]>): void {
  const insert = db.prepare(INSERT);
  db.exec('BEGIN');
  for (const [id, key] of rows)
    insert.run(id, 'agent', 'agent', key, '2026-01-01T00:00:00Z', ACTION);
  db.exec('COMMIT');
}

/** The tick with a backlog in one session (its head running) and many one-action sessions. */
function tick(): void {
  const { dir, done } = tempStore();
  const store = SqliteRuntimeStore.open(dir);
  const db = openDatabase(dir, { create: false });
  const rows: Array<[string, string | null]> = [];
  for (let i = 0; i < BACKLOG; i++) rows.push([`bulk-${i}`, 'bulk']);
  for (let i = 0; i < SESSIONS; i++) rows.push([`one-${i}`, `hook:${i}`]);
  fill(db, rows);
  store.claim('bulk-0');
  const now = Date.now();
  const window = db.prepare(
    "SELECT id, kind, session_key, state, next_attempt_at_ms FROM actions WHERE state IN ('queued', 'running') ORDER BY seq LIMIT 200",
  );
  // The alternative without a heads table: a loose index scan over the session keys.
  const loose = db.prepare(`
    WITH RECURSIVE lanes(key) AS (
      SELECT MIN(session_key) FROM actions INDEXED BY actions_session_pending WHERE state IN ('queued','running') AND session_key IS NOT NULL
      UNION ALL
      SELECT (SELECT session_key FROM actions INDEXED BY actions_session_pending WHERE state IN ('queued','running') AND session_key > lanes.key ORDER BY session_key LIMIT 1)
      FROM lanes WHERE key IS NOT NULL)
    SELECT a.id FROM lanes CROSS JOIN actions a ON a.seq = (SELECT seq FROM actions INDEXED BY actions_session_pending WHERE state IN ('queued','running') AND session_key = lanes.key ORDER BY seq LIMIT 1)
    WHERE a.state = 'queued' AND a.next_attempt_at_ms <= ? ORDER BY a.seq LIMIT 4`);
  const picked = store.dueHeads(now, 4).map((head) => head.id);
  console.log(`tick, ${BACKLOG} queued in one session (head running) + ${SESSIONS} sessions:`);
  console.log(`  picked ${picked.join(', ')}`);
  console.log(
    `  old window (ORDER BY seq LIMIT 200, sees only the backlog): ${micros(200, () => window.all()).toFixed(1)} µs`,
  );
  console.log(
    `  pendingWakes + dueHeads(4): ${micros(2000, () => [store.pendingWakes(500), store.dueHeads(now, 4)]).toFixed(1)} µs`,
  );
  console.log(
    `  loose index scan over session keys: ${micros(3, () => loose.all(now)).toFixed(1)} µs`,
  );
  // Worst case for the heads walk: every one-action session waits for a backoff.
  db.exec(`UPDATE actions SET next_attempt_at_ms = ${now + 3_600_000} WHERE id LIKE 'one-%'`);
  console.log(
    `  dueHeads(4) with all ${SESSIONS} heads in backoff: ${micros(50, () => store.dueHeads(now, 4)).toFixed(1)} µs`,
  );
  db.close();
  store.close();
  done();
}

/** The writer's insert: CPU µs per row in transactions of 64 (WAL, FULL), with or without heads. */
function inserts(withHeads: boolean, keyOf: (i: number) => string): number {
  const { dir, done } = tempStore();
  const db = openDatabase(dir, { create: true });
  if (!withHeads) {
    db.exec(`DROP TRIGGER actions_head_insert; DROP TRIGGER actions_head_state;
      DROP TRIGGER actions_head_backoff; DROP INDEX actions_session_pending;`);
  }
  const insert = db.prepare(INSERT);
  let n = 0;
  const cpu = process.cpuUsage();
  for (let batch = 0; batch < 300; batch++) {
    db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < 64; i++, n++) {
      insert.run(`a-${n}`, 'agent', 'agent', keyOf(n), '2026-01-01T00:00:00Z', ACTION);
    }
    db.exec('COMMIT');
  }
  const used = process.cpuUsage(cpu);
  db.close();
  done();
  return (used.user + used.system) / n;
}

tick();
for (const [name, keyOf] of [
  ['a new session per action', (i: number) => `hook:${i}`],
  ['one session', () => 'bulk'],
] as const) {
  const before: number[] = [];
  const after: number[] = [];
  // Interleaved rounds: the machine's other load moves both alike.
  for (let round = 0; round < 5; round++) {
    before.push(inserts(false, keyOf));
    after.push(inserts(true, keyOf));
  }
  const [b, a] = [median(before), median(after)];
  console.log(
    `insert, ${name}: ${b.toFixed(1)} CPU µs/row before, ${a.toFixed(1)} with heads (+${(a - b).toFixed(1)}), medians of 5`,
  );
}
