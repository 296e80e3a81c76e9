/**
 * The runtime store on the embedded SQLite file: the action lifecycle
 * (queued -> running -> done | failed | dead, with attempts, a next-attempt
 * time and the outcome) on top of the session records. A connection of its
 * own; every write is a short transaction (WAL, synchronous=NORMAL:
 * crash-safe without an fsync per commit). One process owns the file, so it
 * always leads, and at its start every run left running is its to take over.
 */
import type { SQLOutputValue } from 'node:sqlite';
import type { ActionState } from '../../queue/action-store.ts';
import type {
  Claim,
  DeliveryRecord,
  LeaderLease,
  Leadership,
  NewEvent,
  Outcome,
  RunRow,
  RunTurns,
  RuntimeStore,
} from '../../runtime/runtime-store.ts';
import {
  outcomeForRetry,
  readWake,
  UNREADABLE_OUTCOME,
  wakeEvent,
} from '../../runtime/stored-runs.ts';
import { openDatabase } from './schema.ts';
import { now, type Row, SqliteSessionRecords } from './session-records.ts';
import { boundLimit } from './bound-limit.ts';
import { ringDoorbell } from './doorbell.ts';
import { parseStoredAction } from '../stored-action.ts';

/** A run from a row of RUN_COLUMNS read as an array. */
function toRun(row: unknown): RunRow {
  const [seq, id, state, attempts, nextAttemptAtMs, startedAt, finishedAt, outcome, action] =
    row as SQLOutputValue[];
  return {
    seq: Number(seq),
    id: id as string,
    state: state as ActionState,
    attempts: Number(attempts),
    nextAttemptAtMs: Number(nextAttemptAtMs),
    startedAt: (startedAt as string | null) ?? null,
    finishedAt: (finishedAt as string | null) ?? null,
    outcome: outcome ? (JSON.parse(outcome as string) as Outcome) : null,
    action: parseStoredAction(action as string),
  };
}

// The session's index, never the state index: a big backlog is all 'queued' too.
const PENDING_WAKES = `SELECT id FROM actions INDEXED BY actions_session_pending
  WHERE session_key IS NULL AND state IN ('queued', 'running') AND state = 'queued'
  ORDER BY seq ${boundLimit()}`;

// Heads of agent sessions (not the wake lane '') that are queued, in turn order (order_seq: a
// session just served goes behind those that waited; migrations.ts).
const DUE_HEADS = (due: string) =>
  `SELECT h.order_seq, h.head_seq, h.lane, a.id FROM session_heads h INDEXED BY session_heads_due
   CROSS JOIN actions a ON a.seq = h.head_seq
   WHERE ${due} AND h.lane <> '' AND a.state = 'queued' ORDER BY h.order_seq, h.head_seq ${boundLimit()}`;
const DUE_FRESH = DUE_HEADS('h.not_before_ms = 0');
const DUE_RETRIED = DUE_HEADS('h.not_before_ms > 0 AND h.not_before_ms <= ?');

// Another session's head before h in turn order, queued and due (?1 the session, ?2 now): it
// waits.
const BEFORE_WAITING = (
  due: string,
) => `EXISTS (SELECT 1 FROM session_heads o INDEXED BY session_heads_due
    CROSS JOIN actions b ON b.seq = o.head_seq
    WHERE ${due} AND (o.order_seq, o.head_seq) < (h.order_seq, h.head_seq)
      AND o.lane <> ?1 AND o.lane <> '' AND b.state = 'queued')`;
// A session's head when it is queued and due (?2 now), nothing of the session runs (an older
// run sent back by the retry command is not passed over while this one's end did not take;
// read from the running rows only, never the session's backlog), and no head of another
// session before it in turn order waits: its next run, as the pass would pick it.
const NEXT_HEAD = `SELECT a.id FROM session_heads h CROSS JOIN actions a ON a.seq = h.head_seq
  WHERE h.lane = ?1 AND h.not_before_ms <= ?2 AND a.state = 'queued'
    AND NOT EXISTS (SELECT 1 FROM actions r INDEXED BY actions_open
      WHERE r.state = 'running' AND r.state <> 'done' AND r.session_key = ?1)
    AND NOT ${BEFORE_WAITING('o.not_before_ms = 0')}
    AND NOT ${BEFORE_WAITING('o.not_before_ms > 0 AND o.not_before_ms <= ?2')}`;

// From the index of rows not done: only the running rows are read.
const RUNNING_SESSIONS = `SELECT DISTINCT session_key FROM actions INDEXED BY actions_open
  WHERE state = 'running' AND state <> 'done' AND session_key IS NOT NULL`;

const RUN_COLUMNS =
  'seq, id, state, attempts, next_attempt_at_ms, started_at, finished_at, outcome, action';

// Runs newest first: all, done ones, or those in a state other than done (read from its
// index: the term is repeated so SQLite uses it).
const RUNS = `SELECT ${RUN_COLUMNS} FROM actions ORDER BY seq DESC ${boundLimit()}`;
const RUNS_DONE = `SELECT ${RUN_COLUMNS} FROM actions WHERE state = ? ORDER BY seq DESC ${boundLimit()}`;
const RUNS_IN_STATE = `SELECT ${RUN_COLUMNS} FROM actions WHERE state = ? AND state <> 'done'
  ORDER BY seq DESC ${boundLimit()}`;

/** Where one process owns the store, it always leads. */
const SOLE_LEADER: Leadership = {
  lead: () => Promise.resolve(true),
  resign: () => Promise.resolve(),
};

// Unreadable heads one claim pass ends at most (each is a write inside the pass's transaction).
const MAX_ENDED_PER_PASS = 200;

// A claimed run is written to only while it is still this claim's attempt.
const FENCE = "id = ? AND state = 'running' AND attempts = ?";

/** The runtime store over one SQLite connection. */
export class SqliteRuntimeStore extends SqliteSessionRecords implements RuntimeStore {
  readonly leadership = SOLE_LEADER;
  // The last claim pass stopped at its bound of unreadable heads with due heads left unread.
  private headsLeft = false;
  /**
   * Open the store in a data directory: schema created and migrated if needed, or, with
   * `migrate: false` (the command-line views), the file as it is.
   */
  static open(dataDir: string, options: { migrate?: boolean } = {}): SqliteRuntimeStore {
    const db = openDatabase(dataDir, { create: options.migrate ?? true });
    // Lifecycle writes: NORMAL (no fsync per commit in WAL) keeps them cheap and still survives
    // a process crash (SIGKILL). Acceptance stays FULL on its own connection.
    db.exec('PRAGMA synchronous = NORMAL');
    return new SqliteRuntimeStore(db, dataDir);
  }

  /** One process owns the file: actions left running go back to the queue; their runner groups. */
  async recoverInterrupted(): Promise<Array<{ id: string; pgid: number | null }>> {
    return this.transaction(() => {
      // The repeated term lets SQLite use the index of rows not done, not read every row.
      const rows = this.statement(
        "SELECT id, runner_pgid FROM actions WHERE state = 'running' AND state <> 'done'",
      ).all() as Row[];
      this.statement(
        "UPDATE actions SET state = 'queued', runner_pgid = NULL WHERE state = 'running' AND state <> 'done'",
      ).run();
      return rows.map((row) => ({
        id: row['id'] as string,
        pgid: row['runner_pgid'] === null ? null : Number(row['runner_pgid']),
      }));
    });
  }

  /** Nothing to renew: no other process can take a run over. */
  async renewLeases(): Promise<void> {}

  /** No lease: the server on this file leads whenever it runs. */
  async leaderLease(): Promise<LeaderLease> {
    return { kind: 'sole' };
  }

  /**
   * Queued wakes (the main session's event lane), oldest first. They only append events, so
   * they never wait for a runner or behind any session's backlog.
   */
  pendingWakes(limit: number): string[] {
    const rows = this.statement(PENDING_WAKES).all(limit) as Row[];
    return rows.map((row) => row['id'] as string);
  }

  /**
   * The heads of agent sessions that may run now (queued, due), in turn order: sessions whose
   * turn ended most recently last, else oldest head first. A head that is running or waits for its backoff holds back only its own session. The cost depends on
   * the number of sessions with work, never on the length of one session's backlog.
   */
  dueHeads(nowMs: number, limit: number): Array<{ id: string; sessionKey: string }> {
    if (limit <= 0) return [];
    // Two walks of (not_before_ms, order_seq, head_seq), each stopping after `limit` hits: heads
    // that never waited, in turn order, and heads whose backoff is over. Waiting heads are never read.
    const fresh = this.statement(DUE_FRESH).all(limit) as Row[];
    const retried = this.statement(DUE_RETRIED).all(nowMs, limit) as Row[];
    return [...fresh, ...retried]
      .sort(
        (a, b) =>
          Number(a['order_seq']) - Number(b['order_seq']) ||
          Number(a['head_seq']) - Number(b['head_seq']),
      )
      .slice(0, limit)
      .map((row) => ({ id: row['id'] as string, sessionKey: row['lane'] as string }));
  }

  /**
   * Sessions with a running action (few: bounded by the concurrency). A retried action older
   * than its session's running one is that session's head, yet it waits for the running one.
   */
  private runningSessions(): Set<string> {
    const rows = this.statement(RUNNING_SESSIONS).all() as Row[];
    return new Set(rows.map((row) => row['session_key'] as string));
  }

  async nextDueAtMs(): Promise<number | null> {
    // The last pass stopped ending unreadable heads before it read them all: look again now.
    if (this.headsLeft) return Date.now();
    const row = this.statement(
      'SELECT MIN(not_before_ms) AS at FROM session_heads WHERE not_before_ms > ?',
    ).get(Date.now()) as { at: number | null };
    return row.at === null ? null : Number(row.at);
  }

  async hasRunnable(): Promise<boolean> {
    if (this.pendingWakes(1).length > 0) return true;
    const running = this.runningSessions();
    return this.dueHeads(Date.now(), 1 + running.size).some(
      (head) => !running.has(head.sessionKey),
    );
  }

  async claimHeads(room: number, busy: ReadonlySet<string>): Promise<RunRow[]> {
    // Every claim of the pass in one transaction, with the turn's other writes; the heads are
    // read there too, after the writes asked for before this pass (a run's end moves its head).
    return this.batched(() => {
      const skip = new Set([...busy, ...this.runningSessions()]);
      const claimed: RunRow[] = [];
      // A head that could not be read ends dead and its session's next one is its head: the heads
      // are read again while the room is not filled (nothing else may look again soon), up to a
      // bound per pass, so a file full of such rows never holds the write lock for long.
      let ended = 0;
      this.headsLeft = false;
      for (;;) {
        const before = ended;
        // Enough heads to fill the room past the skipped sessions' heads.
        for (const head of this.dueHeads(Date.now(), room - claimed.length + skip.size)) {
          if (claimed.length >= room) break;
          if (skip.has(head.sessionKey)) continue;
          const row = this.claimOrEnd(head.id);
          if (row === 'ended') ended++;
          else if (row) {
            claimed.push(row);
            skip.add(head.sessionKey);
          }
        }
        if (ended === before || claimed.length >= room) break;
        if (ended >= MAX_ENDED_PER_PASS) {
          // The next look comes at once (nextDueAtMs).
          this.headsLeft = true;
          break;
        }
      }
      return claimed;
    });
  }

  claimHeadsAfterEnd(room: number, busy: ReadonlySet<string>): Promise<RunRow[]> {
    // The pass's claims are batched already: asked after an end, they run in its transaction.
    return this.claimHeads(room, busy);
  }

  async claimNext(sessionKey: string): Promise<RunRow | undefined> {
    return this.batched(() => {
      const head = this.arrays(NEXT_HEAD).get(sessionKey, Date.now()) as
        | SQLOutputValue[]
        | undefined;
      return head ? this.claimRow(head[0] as string) : undefined;
    });
  }

  /** Move a queued action to running (one more attempt); undefined when it was not queued. */
  claim(id: string): RunRow | undefined {
    return this.transaction(() => this.claimRow(id));
  }

  private claimRow(id: string): RunRow | undefined {
    const row = this.claimOrEnd(id);
    return row === 'ended' ? undefined : row;
  }

  /** The claim; 'ended' when the row could not be read and ended dead instead. */
  private claimOrEnd(id: string): RunRow | 'ended' | undefined {
    // The claim and the read of the claimed row in one statement.
    const row = this.arrays(
      `UPDATE actions SET state = 'running', attempts = attempts + 1, started_at = ? WHERE id = ? AND state = 'queued' RETURNING ${RUN_COLUMNS}`,
    ).get(now(), id);
    if (!row) return undefined;
    try {
      return toRun(row);
    } catch {
      // A row no hook could have written (another process, a damaged file) ends at once,
      // so it never holds back its session or, as the oldest head, every pass.
      this.statement(
        "UPDATE actions SET state = 'dead', outcome = ?, finished_at = ? WHERE id = ?",
      ).run(JSON.stringify(UNREADABLE_OUTCOME), now(), id);
      return 'ended';
    }
  }

  async applyWakes(
    mainKey: string,
    limit: number,
  ): Promise<{ applied: number; modes: Array<'now' | 'next-heartbeat'> }> {
    const ids = this.pendingWakes(limit);
    if (ids.length === 0) return { applied: 0, modes: [] };
    return { applied: ids.length, modes: this.completeWakes(ids, mainKey) };
  }

  /**
   * Finish queued wake actions in one transaction: each appends its (wrapped) text to the
   * session as an event. Returns the modes of those that were still queued.
   */
  private completeWakes(
    ids: readonly string[],
    sessionKey: string,
  ): Array<'now' | 'next-heartbeat'> {
    return this.transaction(() => {
      const at = now();
      const select = this.statement("SELECT action FROM actions WHERE id = ? AND state = 'queued'");
      const update = this.statement(
        "UPDATE actions SET state = 'done', attempts = attempts + 1, started_at = ?, finished_at = ?, outcome = ? WHERE id = ?",
      );
      const dead = this.statement(
        "UPDATE actions SET state = 'dead', attempts = attempts + 1, started_at = ?, finished_at = ?, outcome = ? WHERE id = ?",
      );
      const modes: Array<'now' | 'next-heartbeat'> = [];
      for (const id of ids) {
        const row = select.get(id) as Row | undefined;
        if (!row) continue;
        const action = readWake(row['action'] as string);
        if (!action) {
          // A row no wake could have written (another process, a damaged file): it ends, alone.
          dead.run(at, at, JSON.stringify(UNREADABLE_OUTCOME), id);
          continue;
        }
        update.run(at, at, JSON.stringify({ status: 'ok' }), id);
        this.insertEvent({ ...wakeEvent(action, sessionKey), actionId: id });
        modes.push(action.mode);
      }
      return modes;
    });
  }

  async setRunnerGroup(claim: Claim, pgid: number | null): Promise<void> {
    // Written at once, not batched: a crash right after the spawn must still find the group.
    this.statement(`UPDATE actions SET runner_pgid = ? WHERE ${FENCE}`).run(
      pgid,
      claim.id,
      claim.attempts,
    );
  }

  async finish(
    claim: Claim,
    state: 'done' | 'failed' | 'dead',
    outcome: Outcome,
    event?: NewEvent,
    turns?: RunTurns,
    delivery?: DeliveryRecord,
  ): Promise<boolean> {
    return this.batched(() => {
      const changed = this.statement(
        `UPDATE actions SET state = ?, outcome = ?, finished_at = ?, runner_pgid = NULL WHERE ${FENCE}`,
      ).run(state, JSON.stringify(outcome), now(), claim.id, claim.attempts).changes;
      if (Number(changed) === 0) return false;
      if (turns) this.insertTurns(turns.owner, claim.id, turns.prompt, turns.reply);
      if (event) this.insertEvent(event);
      if (delivery) this.insertDelivery(delivery);
      return true;
    });
  }

  async saveOutcome(claim: Claim, outcome: Outcome, turns?: RunTurns): Promise<boolean> {
    const save = () => {
      const changed = this.statement(`UPDATE actions SET outcome = ? WHERE ${FENCE}`).run(
        JSON.stringify(outcome),
        claim.id,
        claim.attempts,
      ).changes;
      if (Number(changed) === 0) return false;
      if (turns) this.insertTurns(turns.owner, claim.id, turns.prompt, turns.reply);
      return true;
    };
    return this.batched(save);
  }

  async requeue(
    claim: Claim,
    delayMs: number,
    outcome: Outcome,
    options: { refundAttempt?: boolean } = {},
  ): Promise<boolean> {
    // An attempt our own shutdown interrupted is given back: it says nothing about the work.
    const refund = options.refundAttempt ? 1 : 0;
    const at = delayMs > 0 ? Date.now() + delayMs : 0;
    return this.batched(() => {
      const changed = this.statement(
        `UPDATE actions SET state = 'queued', next_attempt_at_ms = ?, outcome = ?, runner_pgid = NULL, attempts = MAX(0, attempts - ?) WHERE ${FENCE}`,
      ).run(at, JSON.stringify(outcome), refund, claim.id, claim.attempts).changes;
      return Number(changed) > 0;
    });
  }

  /** Runs (actions with their lifecycle), newest first, optionally in one state. */
  async runs(limit: number, state?: ActionState): Promise<RunRow[]> {
    const rows = state
      ? this.arrays(state === 'done' ? RUNS_DONE : RUNS_IN_STATE).all(state, limit)
      : this.arrays(RUNS).all(limit);
    return rows.map(toRun);
  }

  /** How many actions are in each state (every state present, 0 when none): the queue's depth. */
  async countByState(): Promise<Record<ActionState, number>> {
    const counts: Record<ActionState, number> = {
      queued: 0,
      running: 0,
      done: 0,
      failed: 0,
      dead: 0,
    };
    // The states other than done from their index alone; done is what remains of all rows.
    const rows = this.statement(
      "SELECT state, COUNT(*) AS n FROM actions INDEXED BY actions_open WHERE state <> 'done' GROUP BY state",
    ).all() as Row[];
    let open = 0;
    for (const row of rows) {
      const state = row['state'] as ActionState;
      if (state in counts) counts[state] = Number(row['n']);
      open += Number(row['n']);
    }
    const total = this.statement('SELECT COUNT(*) AS n FROM actions').get() as Row;
    counts.done = Number(total['n']) - open;
    return counts;
  }

  /** One run by id. */
  async run(id: string): Promise<RunRow | undefined> {
    const row = this.arrays(`SELECT ${RUN_COLUMNS} FROM actions WHERE id = ?`).get(id);
    return row ? toRun(row) : undefined;
  }

  async states(ids: readonly string[]): Promise<Map<string, ActionState>> {
    const found = new Map<string, ActionState>();
    // In slices: SQLite bounds the number of parameters of one statement.
    for (let at = 0; at < ids.length; at += 500) {
      const slice = ids.slice(at, at + 500);
      const rows = this.db
        .prepare(`SELECT id, state FROM actions WHERE id IN (${slice.map(() => '?').join(',')})`)
        .all(...slice) as Row[];
      for (const row of rows) found.set(row['id'] as string, row['state'] as ActionState);
    }
    return found;
  }

  /** A dead (or, when asked, failed) action back to the queue with fresh attempts; false otherwise. */
  async retryDead(id: string, options: { failed?: boolean } = {}): Promise<boolean> {
    // Never `done`: a turn that succeeded is not run twice.
    const states = options.failed ? "('dead', 'failed')" : "('dead')";
    const sent = this.transaction(() => {
      const row = this.statement(
        `SELECT outcome FROM actions WHERE id = ? AND state IN ${states}`,
      ).get(id) as Row | undefined;
      if (!row) return false;
      const outcome = row['outcome'] ? (JSON.parse(row['outcome'] as string) as Outcome) : null;
      const kept = outcomeForRetry(outcome);
      this.statement(
        `UPDATE actions SET state = 'queued', attempts = 0, next_attempt_at_ms = 0, outcome = ?
           WHERE id = ?`,
      ).run(kept ? JSON.stringify(kept) : null, id);
      return true;
    });
    if (sent) ringDoorbell(this.dataDir);
    return sent;
  }

  /** The embedded store keeps every run (as it always has): `hookgate runs` shows them all. */
  async pruneFinished(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {
    this.closeDatabase();
  }
}
