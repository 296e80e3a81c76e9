/**
 * The runtime's view of the store: action lifecycle (queued -> running ->
 * done | failed | dead, with attempts and a next-attempt time), the main
 * session's system events, session history, heartbeat records, deliveries
 * handed on, and control requests from the command line. A connection of
 * its own; every write is a short transaction (WAL, synchronous=FULL).
 */
import { randomUUID } from 'node:crypto';
import type { DatabaseSync } from 'node:sqlite';
import type { Action } from '../../schemas/action.ts';
import type { ActionState } from '../queue/action-store.ts';
import { openDatabase } from '../queue/sqlite-schema.ts';

/** How an action ended (or why it is waiting to be retried). */
export type Outcome = {
  /** `delivering`: the turn ran; its reply is still being delivered (retries redo only the delivery). */
  status: 'ok' | 'error' | 'timeout' | 'retrying' | 'delivering';
  reply?: string;
  reason?: string;
  ack?: boolean;
  delivery?: DeliveryProgress;
};

/** Where a reply's delivery stands. */
export type DeliveryProgress = {
  state: 'pending' | 'sent' | 'failed' | 'skipped' | 'dead';
  channel?: string;
  recipient?: string;
  parts?: number;
  partsSent?: number;
  attempts?: number;
  reason?: string;
};

export type RunRow = {
  seq: number;
  id: string;
  state: ActionState;
  attempts: number;
  nextAttemptAtMs: number;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: Outcome | null;
  action: Action;
};

export type SystemEvent = {
  seq: number;
  sessionKey: string;
  text: string;
  source: string;
  actionId: string | null;
  trusted: boolean;
  createdAt: string;
  consumedBy: string | null;
};

export type Turn = {
  role: 'user' | 'assistant';
  text: string;
  runId: string | null;
  createdAt: string;
};

type Row = Record<string, string | number | null>;

const now = () => new Date().toISOString();

function toRun(row: Row): RunRow {
  return {
    seq: Number(row['seq']),
    id: row['id'] as string,
    state: row['state'] as ActionState,
    attempts: Number(row['attempts']),
    nextAttemptAtMs: Number(row['next_attempt_at_ms']),
    startedAt: (row['started_at'] as string | null) ?? null,
    finishedAt: (row['finished_at'] as string | null) ?? null,
    outcome: row['outcome'] ? (JSON.parse(row['outcome'] as string) as Outcome) : null,
    action: JSON.parse(row['action'] as string) as Action,
  };
}

function toEvent(row: Row): SystemEvent {
  return {
    seq: Number(row['seq']),
    sessionKey: row['session_key'] as string,
    text: row['text'] as string,
    source: row['source'] as string,
    actionId: (row['action_id'] as string | null) ?? null,
    trusted: Number(row['trusted']) === 1,
    createdAt: row['created_at'] as string,
    consumedBy: (row['consumed_by'] as string | null) ?? null,
  };
}

const RUN_COLUMNS =
  'seq, id, state, attempts, next_attempt_at_ms, started_at, finished_at, outcome, action';

/** The runtime store over one SQLite connection. */
export class RuntimeStore {
  private readonly db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  /** Open the store in a data directory (schema created and migrated if needed). */
  static open(dataDir: string): RuntimeStore {
    const db = openDatabase(dataDir, { create: true });
    // Lifecycle writes run on the event loop: NORMAL (no fsync per commit in WAL) keeps them
    // cheap and still survives a process crash (SIGKILL). Acceptance stays FULL on its own thread.
    db.exec('PRAGMA synchronous = NORMAL');
    return new RuntimeStore(db);
  }

  private transaction<T>(work: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = work();
      this.db.exec('COMMIT');
      return result;
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /** After a crash: actions left running go back to the queue; returns their runner process groups. */
  recoverRunning(): Array<{ id: string; pgid: number | null }> {
    return this.transaction(() => {
      const rows = this.db
        .prepare("SELECT id, runner_pgid FROM actions WHERE state = 'running'")
        .all() as Row[];
      this.db
        .prepare("UPDATE actions SET state = 'queued', runner_pgid = NULL WHERE state = 'running'")
        .run();
      return rows.map((row) => ({
        id: row['id'] as string,
        pgid: row['runner_pgid'] === null ? null : Number(row['runner_pgid']),
      }));
    });
  }

  /** Unfinished actions (queued or running) in acceptance order. */
  unfinished(limit: number): Array<{
    id: string;
    kind: string;
    sessionKey: string | null;
    state: ActionState;
    nextAttemptAtMs: number;
  }> {
    const rows = this.db
      .prepare(
        "SELECT id, kind, session_key, state, next_attempt_at_ms FROM actions WHERE state IN ('queued', 'running') ORDER BY seq LIMIT ?",
      )
      .all(limit) as Row[];
    return rows.map((row) => ({
      id: row['id'] as string,
      kind: row['kind'] as string,
      sessionKey: (row['session_key'] as string | null) ?? null,
      state: row['state'] as ActionState,
      nextAttemptAtMs: Number(row['next_attempt_at_ms']),
    }));
  }

  /** Move a queued action to running (one more attempt); undefined when it was not queued. */
  claim(id: string): RunRow | undefined {
    return this.transaction(() => {
      const changed = this.db
        .prepare(
          "UPDATE actions SET state = 'running', attempts = attempts + 1, started_at = ? WHERE id = ? AND state = 'queued'",
        )
        .run(now(), id).changes;
      if (Number(changed) === 0) return undefined;
      return toRun(
        this.db.prepare(`SELECT ${RUN_COLUMNS} FROM actions WHERE id = ?`).get(id) as Row,
      );
    });
  }

  /**
   * Finish queued wake actions in one transaction: each appends its (wrapped) text to the
   * session as an event. Returns the modes of those that were still queued.
   */
  completeWakes(ids: readonly string[], sessionKey: string): Array<'now' | 'next-heartbeat'> {
    return this.transaction(() => {
      const at = now();
      const select = this.db.prepare(
        "SELECT action FROM actions WHERE id = ? AND state = 'queued'",
      );
      const update = this.db.prepare(
        "UPDATE actions SET state = 'done', attempts = attempts + 1, started_at = ?, finished_at = ?, outcome = ? WHERE id = ?",
      );
      const modes: Array<'now' | 'next-heartbeat'> = [];
      for (const id of ids) {
        const row = select.get(id) as Row | undefined;
        if (!row) continue;
        const action = JSON.parse(row['action'] as string) as Extract<Action, { kind: 'wake' }>;
        update.run(at, at, JSON.stringify({ status: 'ok' }), id);
        this.insertEvent({
          sessionKey,
          text: action.prompt ?? action.text,
          source: 'wake',
          actionId: id,
          trusted: !action.untrusted,
        });
        modes.push(action.mode);
      }
      return modes;
    });
  }

  /** Record the process group of a running action's runner (ended on the next start after a crash). */
  setRunnerGroup(id: string, pgid: number | null): void {
    this.db.prepare('UPDATE actions SET runner_pgid = ? WHERE id = ?').run(pgid, id);
  }

  /** Final outcome, together with the summary event it posts (one transaction). */
  finish(id: string, state: 'done' | 'failed' | 'dead', outcome: Outcome, event?: NewEvent): void {
    this.transaction(() => {
      this.db
        .prepare(
          'UPDATE actions SET state = ?, outcome = ?, finished_at = ?, runner_pgid = NULL WHERE id = ?',
        )
        .run(state, JSON.stringify(outcome), now(), id);
      if (event) this.insertEvent(event);
    });
  }

  /** Save progress while an action runs (e.g. parts already delivered). */
  saveOutcome(id: string, outcome: Outcome): void {
    this.db.prepare('UPDATE actions SET outcome = ? WHERE id = ?').run(JSON.stringify(outcome), id);
  }

  /** Back to the queue for another attempt after `nextAttemptAtMs`. */
  requeue(
    id: string,
    nextAttemptAtMs: number,
    outcome: Outcome,
    options: { refundAttempt?: boolean } = {},
  ): void {
    // An attempt our own shutdown interrupted is given back: it says nothing about the work.
    const refund = options.refundAttempt ? 1 : 0;
    this.db
      .prepare(
        "UPDATE actions SET state = 'queued', next_attempt_at_ms = ?, outcome = ?, runner_pgid = NULL, attempts = MAX(0, attempts - ?) WHERE id = ?",
      )
      .run(nextAttemptAtMs, JSON.stringify(outcome), refund, id);
  }

  /** Append a system event to a session. */
  addEvent(event: NewEvent): void {
    this.insertEvent(event);
  }

  private insertEvent(event: NewEvent): void {
    this.db
      .prepare(
        'INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(
        event.sessionKey,
        event.text,
        event.source,
        event.actionId ?? null,
        event.trusted ? 1 : 0,
        now(),
      );
  }

  /** Events no heartbeat has consumed yet, oldest first. */
  pendingEvents(sessionKey: string, limit: number): SystemEvent[] {
    const rows = this.db
      .prepare(
        'SELECT * FROM system_events WHERE session_key = ? AND consumed_by IS NULL ORDER BY seq LIMIT ?',
      )
      .all(sessionKey, limit) as Row[];
    return rows.map(toEvent);
  }

  /** Events of a session, newest first (pending and consumed). */
  events(sessionKey: string, limit: number): SystemEvent[] {
    const rows = this.db
      .prepare('SELECT * FROM system_events WHERE session_key = ? ORDER BY seq DESC LIMIT ?')
      .all(sessionKey, limit) as Row[];
    return rows.map(toEvent);
  }

  /** The last turns of a session, oldest first. */
  history(sessionKey: string, limit: number): Turn[] {
    const rows = this.db
      .prepare(
        'SELECT role, text, run_id, created_at FROM session_turns WHERE session_key = ? ORDER BY seq DESC LIMIT ?',
      )
      .all(sessionKey, limit) as Row[];
    return rows.reverse().map((row) => ({
      role: row['role'] as 'user' | 'assistant',
      text: row['text'] as string,
      runId: (row['run_id'] as string | null) ?? null,
      createdAt: row['created_at'] as string,
    }));
  }

  /** Append a prompt and its reply to a session's history. */
  addTurns(sessionKey: string, runId: string, prompt: string, reply: string): void {
    this.transaction(() => {
      const insert = this.db.prepare(
        'INSERT INTO session_turns (session_key, role, text, run_id, created_at) VALUES (?, ?, ?, ?, ?)',
      );
      insert.run(sessionKey, 'user', prompt, runId, now());
      insert.run(sessionKey, 'assistant', reply, runId, now());
    });
  }

  /** Open a heartbeat record. */
  startHeartbeat(reason: string): string {
    const id = randomUUID();
    this.db
      .prepare("INSERT INTO heartbeats (id, reason, state, started_at) VALUES (?, ?, 'running', ?)")
      .run(id, reason, now());
    return id;
  }

  /** Record the process group of a heartbeat's runner. */
  setHeartbeatGroup(id: string, pgid: number | null): void {
    this.db.prepare('UPDATE heartbeats SET runner_pgid = ? WHERE id = ?').run(pgid, id);
  }

  /** After a crash: heartbeats left running are failed (their events stay pending); returns runner groups. */
  recoverHeartbeats(): number[] {
    return this.transaction(() => {
      const rows = this.db
        .prepare("SELECT runner_pgid FROM heartbeats WHERE state = 'running'")
        .all() as Row[];
      this.db
        .prepare(
          "UPDATE heartbeats SET state = 'failed', error = 'interrupted by a restart', finished_at = ? WHERE state = 'running'",
        )
        .run(now());
      return rows.flatMap((row) =>
        row['runner_pgid'] === null ? [] : [Number(row['runner_pgid'])],
      );
    });
  }

  /** Close a heartbeat record; on success mark the events it included as consumed. */
  finishHeartbeat(
    id: string,
    result: {
      state: 'done' | 'failed';
      events: number[];
      reply?: string;
      ack?: boolean;
      error?: string;
    },
  ): void {
    this.transaction(() => {
      this.db
        .prepare(
          'UPDATE heartbeats SET state = ?, finished_at = ?, events = ?, reply = ?, ack = ?, error = ? WHERE id = ?',
        )
        .run(
          result.state,
          now(),
          result.events.length,
          result.reply ?? null,
          result.ack === undefined ? null : result.ack ? 1 : 0,
          result.error ?? null,
          id,
        );
      if (result.state === 'done') {
        const consume = this.db.prepare('UPDATE system_events SET consumed_by = ? WHERE seq = ?');
        for (const seq of result.events) consume.run(id, seq);
      }
    });
  }

  /** Heartbeat records, newest first. */
  heartbeats(limit: number): Row[] {
    return this.db
      .prepare('SELECT * FROM heartbeats ORDER BY started_at DESC LIMIT ?')
      .all(limit) as Row[];
  }

  /** Record a delivery's final outcome (sent, failed, skipped or dead) for the audit trail. */
  recordDelivery(delivery: DeliveryRecord): string {
    const id = randomUUID();
    const at = now();
    this.db
      .prepare(
        'INSERT INTO deliveries (id, source, source_id, channel, recipient, text, state, attempts, error, parts, parts_sent, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(
        id,
        delivery.source,
        delivery.sourceId,
        delivery.channel,
        delivery.recipient ?? null,
        delivery.text,
        delivery.state,
        delivery.attempts,
        delivery.error ?? null,
        delivery.parts,
        delivery.partsSent,
        at,
        at,
      );
    return id;
  }

  /** The session's last route (channel and recipient), if any. */
  lastRoute(sessionKey: string): { channel: string; recipient: string } | undefined {
    const row = this.db
      .prepare('SELECT channel, recipient FROM routes WHERE session_key = ?')
      .get(sessionKey) as Row | undefined;
    return row
      ? { channel: row['channel'] as string, recipient: row['recipient'] as string }
      : undefined;
  }

  /** Record where the session was last reached; `onlyIfMissing` seeds without overwriting. */
  setRoute(sessionKey: string, channel: string, recipient: string, onlyIfMissing = false): void {
    const verb = onlyIfMissing ? 'INSERT OR IGNORE' : 'INSERT OR REPLACE';
    this.db
      .prepare(
        `${verb} INTO routes (session_key, channel, recipient, updated_at) VALUES (?, ?, ?, ?)`,
      )
      .run(sessionKey, channel, recipient, now());
  }

  /** Deliveries, newest first. */
  deliveries(limit: number): Row[] {
    return this.db
      .prepare('SELECT * FROM deliveries ORDER BY created_at DESC LIMIT ?')
      .all(limit) as Row[];
  }

  /** Runs (actions with their lifecycle), newest first, optionally in one state. */
  runs(limit: number, state?: ActionState): RunRow[] {
    const rows = state
      ? (this.db
          .prepare(`SELECT ${RUN_COLUMNS} FROM actions WHERE state = ? ORDER BY seq DESC LIMIT ?`)
          .all(state, limit) as Row[])
      : (this.db
          .prepare(`SELECT ${RUN_COLUMNS} FROM actions ORDER BY seq DESC LIMIT ?`)
          .all(limit) as Row[]);
    return rows.map(toRun);
  }

  /** One run by id. */
  run(id: string): RunRow | undefined {
    const row = this.db.prepare(`SELECT ${RUN_COLUMNS} FROM actions WHERE id = ?`).get(id) as
      | Row
      | undefined;
    return row ? toRun(row) : undefined;
  }

  /** A dead action back to the queue with fresh attempts; false when it is not dead. */
  retryDead(id: string): boolean {
    // A run that died delivering keeps its reply: the retry redoes only the delivery.
    const changed = this.db
      .prepare(
        `UPDATE actions SET state = 'queued', attempts = 0, next_attempt_at_ms = 0,
           outcome = CASE WHEN json_extract(outcome, '$.reply') IS NOT NULL AND json_extract(outcome, '$.delivery') IS NOT NULL
             THEN json_set(outcome, '$.status', 'delivering', '$.delivery.attempts', 0)
             ELSE NULL END
         WHERE id = ? AND state = 'dead'`,
      )
      .run(id).changes;
    return Number(changed) > 0;
  }

  /** Ask the running server for something (e.g. an immediate heartbeat). */
  request(kind: string): void {
    this.db
      .prepare('INSERT INTO control_requests (kind, created_at) VALUES (?, ?)')
      .run(kind, now());
  }

  /** Requests not yet handled; marks them handled. */
  takeRequests(): string[] {
    return this.transaction(() => {
      const rows = this.db
        .prepare('SELECT seq, kind FROM control_requests WHERE handled_at IS NULL ORDER BY seq')
        .all() as Row[];
      if (rows.length > 0)
        this.db
          .prepare('UPDATE control_requests SET handled_at = ? WHERE handled_at IS NULL')
          .run(now());
      return rows.map((row) => row['kind'] as string);
    });
  }

  close(): void {
    this.db.close();
  }
}

/** A delivery as recorded once it is over. */
export type DeliveryRecord = {
  source: 'agent' | 'heartbeat';
  sourceId: string;
  channel: string;
  recipient?: string;
  text: string;
  state: 'sent' | 'failed' | 'skipped' | 'dead';
  attempts: number;
  parts: number;
  partsSent: number;
  error?: string;
};

/** A system event to append. */
export type NewEvent = {
  sessionKey: string;
  text: string;
  source: string;
  actionId?: string;
  trusted: boolean;
};
