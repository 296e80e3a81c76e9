/**
 * The runtime's session records, the base of the runtime store: system
 * events of sessions, session history, heartbeat records, delivery records,
 * last routes, and control requests from the command line, over one SQLite
 * connection with short transactions. The writes of a run's lifecycle are
 * batched: every one asked for in an event-loop turn goes into one
 * transaction at the end of the turn, and each resolves after its COMMIT.
 */
import { randomUUIDv7 } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { DatabaseSync, SQLOutputValue, StatementSync } from 'node:sqlite';
import {
  ASKED_NOW_PAGE,
  type DeliveryPartsSent,
  type DeliveryRecord,
  type HeartbeatDeliveryClaim,
  type HeartbeatResult,
  type HeartbeatRow,
  type NewEvent,
  type PendingHeartbeatDelivery,
  type SessionStore,
  type Requeued,
  type SystemEvent,
  type Turn,
  type TurnOwner,
} from '../../runtime/runtime-store.ts';
import {
  consumeEvents,
  COPY_EVENT,
  COPY_OF_EVENT,
  EVENT_BY_SEQ,
  eventOf,
  PENDING_ASKED_NOW_PAGE,
  PENDING_EVENTS,
  PENDING_SIZES,
  SESSION_EVENTS,
} from './event-consumption.ts';
import {
  newestHeartbeatRequestUnserved,
  REQUEST_EXPIRY_MS,
  TAKEN_REQUEST_KEEP_MS,
} from '../control-requests.ts';
import { storedEventText } from '../stored-event.ts';
import { boundLimit } from './bound-limit.ts';
import { watchDoorbell, whyNotRung } from './doorbell.ts';
import {
  claimDelivery,
  endDelivery,
  pendingDeliveries,
  QUEUE_DELIVERY,
  RECOVER_DELIVERIES,
  saveDelivery,
} from './heartbeat-deliveries.ts';
import { isoNow, isoTime } from '../../iso-time.ts';

export type Row = Record<string, string | number | null>;

// The last turns of one agent's session, newest first (?: agent, session, kind, limit).
const HISTORY = `SELECT role, text, run_id, created_at FROM session_turns
  WHERE agent_id = ? AND session_key = ? AND kind = ? ORDER BY seq DESC ${boundLimit()}`;
// The UTF-8 size of the last turns' texts, newest first (?: agent, session, kind, limit).
const HISTORY_SIZES = `SELECT octet_length(text) FROM session_turns
  WHERE agent_id = ? AND session_key = ? AND kind = ? ORDER BY seq DESC ${boundLimit()}`;
const HEARTBEATS = `SELECT id, reason, state, started_at, finished_at, events, reply, ack, error, runner_pgid
  FROM heartbeats ORDER BY started_at DESC, rowid DESC ${boundLimit()}`;

// The heartbeats a recovery fails: running, and not among those kept (?1, a JSON array of ids).
const RECOVERED = "state = 'running' AND id NOT IN (SELECT value FROM json_each(?1))";

const EXPIRE_REQUESTS = 'DELETE FROM control_requests WHERE handled_at IS NULL AND created_at < ?';
const HEARTBEAT_REQUEST_UNSERVED = newestHeartbeatRequestUnserved('?');
const ANSWER_REQUEST = 'INSERT OR REPLACE INTO control_answers (seq, result) VALUES (?, ?)';
// The newest request taken before ?: it and every taken one older by seq are dropped, never a
// newer one alone (a clock stepped back would leave an older heartbeat request as the newest).
const TAKEN_BEFORE = 'SELECT max(seq) AS seq FROM control_requests WHERE handled_at < ?';
const DROP_TAKEN = 'DELETE FROM control_requests WHERE handled_at IS NOT NULL AND seq <= ?';
const DROP_ANSWERS = 'DELETE FROM control_answers WHERE seq <= ?';

/** One page of pending events read for a lost request for a heartbeat now. */
type AskedNowPage = { lowest: number | null; size: number; asked: number };

/** A write waiting for the next batch. */
type Batched = {
  work: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
};

/** The current time as stored (ISO 8601). */
export const now = isoNow;

/** Session records over one connection; the runtime store adds the action lifecycle. */
export class SqliteSessionRecords implements SessionStore {
  protected readonly db: DatabaseSync;
  private readonly statements = new Map<string, StatementSync>();
  private readonly arrayStatements = new Map<string, StatementSync>();
  private batch: Batched[] = [];
  private batchScheduled = false;
  private closed = false;
  /** The data directory: its doorbell tells a running server of a change made here. */
  protected readonly dataDir: string;

  constructor(db: DatabaseSync, dataDir: string) {
    this.db = db;
    this.dataDir = dataDir;
  }

  /**
   * Run `work` in the transaction of this event-loop turn's writes: one COMMIT for all of them,
   * so the pages they share (the queue's indexes, the last page of the events and of the
   * history) go to the WAL once, not once per write. Resolves after that COMMIT; a write that
   * throws is undone alone (its savepoint) and rejects, the others stand. Nothing holds the
   * write lock between turns: the acceptance writer never waits for this connection.
   */
  protected batched<T>(work: () => T): Promise<T> {
    // A write asked for after the close (a late timer) is refused, never run on a closed file.
    if (this.closed) return Promise.reject(new Error('the runtime store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.batch.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.batchScheduled) return;
      this.batchScheduled = true;
      setImmediate(() => this.runBatch());
    });
  }

  /** Write the waiting batch now (also before the connection closes). */
  protected runBatch(): void {
    this.batchScheduled = false;
    const batch = this.batch;
    this.batch = [];
    if (batch.length === 0) return;
    const settled: Array<() => void> = [];
    try {
      this.db.exec('BEGIN IMMEDIATE');
      // One write needs no savepoint: its failure ends the transaction, which holds only it.
      const single = batch.length === 1;
      for (const { work, resolve, reject } of batch) {
        if (!single) this.db.exec('SAVEPOINT write');
        try {
          const value = work();
          if (!single) this.db.exec('RELEASE write');
          settled.push(() => resolve(value));
        } catch (err) {
          // An error that ended the whole transaction (I/O, a full disk): nothing of it is kept.
          if (single || !this.db.isTransaction) throw err;
          this.db.exec('ROLLBACK TO write');
          this.db.exec('RELEASE write');
          settled.push(() => reject(err));
        }
      }
      this.db.exec('COMMIT');
    } catch (err) {
      // Runs from the event loop: whatever failed is the batch's answer, never an exception.
      try {
        if (this.db.isTransaction) this.db.exec('ROLLBACK');
      } catch {
        // A broken connection: SQLite ends the transaction itself.
      }
      for (const { reject } of batch) reject(err);
      return;
    }
    for (const settle of settled) settle();
  }

  /** A statement prepared once per connection (preparing costs more than most runs of it). */
  protected statement(sql: string): StatementSync {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * A statement whose rows come back as arrays, in the order of its columns: node:sqlite builds
   * a row object about three times slower than an array (measured on the pending events).
   */
  protected arrays(sql: string): StatementSync {
    let statement = this.arrayStatements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      statement.setReturnArrays(true);
      this.arrayStatements.set(sql, statement);
    }
    return statement;
  }

  protected transaction<T>(work: () => T): T {
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

  async addEvent(event: NewEvent): Promise<void> {
    return this.batched(() => this.insertEvent(event));
  }

  protected insertEvent(event: NewEvent): void {
    this.statement(
      'INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(
      event.sessionKey,
      storedEventText(event.text, event.trusted),
      event.source,
      event.actionId ?? null,
      event.trusted ? 1 : 0,
      now(),
    );
  }

  /** Events no heartbeat has consumed yet, oldest first. */
  async pendingEvents(sessionKey: string, limit: number): Promise<SystemEvent[]> {
    return this.arrays(PENDING_EVENTS).all(sessionKey, limit).map(eventOf);
  }

  async pendingSizes(sessionKey: string, limit: number): Promise<{ seq: number; bytes: number }[]> {
    const rows = this.arrays(PENDING_SIZES).all(sessionKey, limit) as unknown as number[][];
    return rows.map(([seq, bytes]) => ({ seq: Number(seq), bytes: Number(bytes) }));
  }

  async pendingAskedNow(sessionKey: string, signal?: AbortSignal): Promise<boolean> {
    const page = this.statement(PENDING_ASKED_NOW_PAGE);
    let below = Number.MAX_SAFE_INTEGER;
    while (!signal?.aborted) {
      const read = page.get(sessionKey, below, ASKED_NOW_PAGE) as AskedNowPage;
      if (read.asked) return true;
      if (read.lowest === null || read.size < ASKED_NOW_PAGE) return false;
      below = read.lowest;
      // A long backlog is read a page per turn of the event loop: requests are served meanwhile.
      await nextTurn();
    }
    return false;
  }

  /** Events of a session, newest first (pending and consumed). */
  async events(sessionKey: string, limit: number): Promise<SystemEvent[]> {
    return this.arrays(SESSION_EVENTS).all(sessionKey, limit).map(eventOf);
  }

  /** A set-aside event offered again, as a new pending copy. */
  async requeueEvent(seq: number): Promise<Requeued> {
    return this.batched(() => {
      const row = this.arrays(EVENT_BY_SEQ).get(seq);
      if (row === undefined) return { refused: 'unknown' } as const;
      const event = eventOf(row);
      if (!event.setAside)
        return { refused: 'not-set-aside', consumedBy: event.consumedBy } as const;
      const copy = this.statement(COPY_OF_EVENT).get(seq) as Row | undefined;
      if (copy) return { refused: 'requeued', copy: Number(copy['seq']) } as const;
      const { lastInsertRowid } = this.statement(COPY_EVENT).run(seq, now());
      return { seq: Number(lastInsertRowid) };
    });
  }

  /** The last turns of one agent in one session, oldest first (never another agent's or kind's). */
  async history(owner: TurnOwner, limit: number): Promise<Turn[]> {
    const rows = this.ownerRows(HISTORY, owner, limit);
    return rows.reverse().map(([role, text, runId, createdAt]) => ({
      role: role as 'user' | 'assistant',
      text: text as string,
      runId: (runId as string | null) ?? null,
      createdAt: createdAt as string,
    }));
  }

  async historySizes(owner: TurnOwner, limit: number): Promise<number[]> {
    return this.ownerRows(HISTORY_SIZES, owner, limit).map(([bytes]) => Number(bytes));
  }

  /** The newest `limit` rows of one owner's turns, as `sql` selects them (newest first). */
  private ownerRows(sql: string, owner: TurnOwner, limit: number): SQLOutputValue[][] {
    return this.arrays(sql).all(
      owner.agentId,
      owner.sessionKey,
      owner.kind,
      limit,
    ) as unknown as SQLOutputValue[][];
  }

  /** Append a prompt and its reply to an agent's history in a session. */
  async addTurns(owner: TurnOwner, runId: string, prompt: string, reply: string): Promise<void> {
    return this.batched(() => this.insertTurns(owner, runId, prompt, reply));
  }

  /** The two turns of a run, inside the caller's transaction. */
  protected insertTurns(owner: TurnOwner, runId: string, prompt: string, reply: string): void {
    const insert = this.statement(
      'INSERT INTO session_turns (agent_id, session_key, kind, role, text, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const at = now();
    insert.run(owner.agentId, owner.sessionKey, owner.kind, 'user', prompt, runId, at);
    insert.run(owner.agentId, owner.sessionKey, owner.kind, 'assistant', reply, runId, at);
  }

  /** Heartbeat turns stored before history had an owner go to the agent that runs heartbeats. */
  async claimHeartbeatTurns(agentId: string): Promise<void> {
    this.statement(
      "UPDATE session_turns SET agent_id = ? WHERE agent_id IS NULL AND kind = 'heartbeat'",
    ).run(agentId);
  }

  /** Open a heartbeat record. */
  async startHeartbeat(reason: string): Promise<string> {
    // Time-ordered, as the other record ids: the id index grows at its end.
    const id = randomUUIDv7();
    const at = now();
    await this.batched(() =>
      this.statement(
        "INSERT INTO heartbeats (id, reason, state, started_at) VALUES (?, ?, 'running', ?)",
      ).run(id, reason, at),
    );
    return id;
  }

  /** Record the process group of a heartbeat's runner. */
  async setHeartbeatGroup(id: string, pgid: number | null): Promise<void> {
    this.statement('UPDATE heartbeats SET runner_pgid = ? WHERE id = ?').run(pgid, id);
  }

  /** After a crash: heartbeats left running are failed (their events stay pending); returns runner groups. */
  async recoverHeartbeats(
    keep: readonly string[] = [],
  ): Promise<Array<{ id: string; pgid: number }>> {
    const kept = JSON.stringify(keep);
    return this.transaction(() => {
      const rows = this.statement(`SELECT id, runner_pgid FROM heartbeats WHERE ${RECOVERED}`).all(
        kept,
      ) as Row[];
      this.statement(
        `UPDATE heartbeats SET state = 'failed', error = 'interrupted by a restart', finished_at = ?2 WHERE ${RECOVERED}`,
      ).run(kept, now());
      // An attempt in flight died with its process: the delivery is due again (at once).
      this.statement(RECOVER_DELIVERIES).run(kept);
      return rows.flatMap((row) =>
        row['runner_pgid'] === null
          ? []
          : [{ id: String(row['id']), pgid: Number(row['runner_pgid']) }],
      );
    });
  }

  /** Close a heartbeat record; on success mark the events it included as consumed, keep its turns. */
  async finishHeartbeat(id: string, result: HeartbeatResult): Promise<boolean> {
    return this.batched(() => {
      // Only a heartbeat still running: one a restart failed keeps that record.
      const { changes } = this.statement(
        "UPDATE heartbeats SET state = ?, finished_at = ?, events = ?, reply = ?, ack = ?, error = ? WHERE id = ? AND state = 'running'",
      ).run(
        result.state,
        now(),
        result.events.length,
        result.reply ?? null,
        result.ack === undefined ? null : result.ack ? 1 : 0,
        result.error ?? null,
        id,
      );
      if (Number(changes) === 0) return false;
      // Due at once: the first attempt follows the end.
      if (result.state === 'done' && result.deliver) this.statement(QUEUE_DELIVERY).run(id);
      const consumed = result.state === 'done' ? result.events : (result.setAside ?? []);
      consumeEvents((sql) => this.statement(sql), id, consumed);
      for (const seq of result.answers ?? [])
        this.statement(ANSWER_REQUEST).run(seq, `heartbeat ${id}`);
      const turns = result.turns;
      if (turns) this.insertTurns(turns.owner, id, turns.prompt, turns.reply);
      return true;
    });
  }

  /** Heartbeat records, newest first (in the order they started when two share a millisecond). */
  async heartbeats(limit: number): Promise<HeartbeatRow[]> {
    return this.statement(HEARTBEATS).all(limit) as HeartbeatRow[];
  }

  /** Heartbeat replies still to be delivered, in the order of their ids. */
  async pendingHeartbeatDeliveries(
    limit: number,
    afterId = '',
  ): Promise<PendingHeartbeatDelivery[]> {
    return pendingDeliveries((sql) => this.arrays(sql), limit, afterId);
  }

  /** Start the next attempt at a heartbeat reply's delivery, if it is due and none is in flight. */
  async claimHeartbeatDelivery(
    id: string,
    nowMs: number,
    staleBeforeMs: number,
  ): Promise<HeartbeatDeliveryClaim | undefined> {
    return this.batched(() => claimDelivery((sql) => this.arrays(sql), id, nowMs, staleBeforeMs));
  }

  /** Keep an attempt's progress (its lease renewed), or end it with the next attempt due at `retry.atMs`. */
  async saveHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    progress: DeliveryPartsSent,
    retry?: { atMs: number; refund?: boolean },
  ): Promise<boolean> {
    return this.batched(() => saveDelivery((sql) => this.statement(sql), claim, progress, retry));
  }

  /** End a heartbeat reply's delivery with its record (and a failure's note), fenced by the attempt. */
  async endHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    record: DeliveryRecord,
    note?: NewEvent,
  ): Promise<boolean> {
    return this.batched(() => {
      if (!endDelivery((sql) => this.statement(sql), claim)) return false;
      this.insertDelivery(record);
      if (note) this.insertEvent(note);
      return true;
    });
  }

  /** Record a delivery's final outcome (sent, failed, skipped or dead) for the audit trail. */
  async recordDelivery(delivery: DeliveryRecord): Promise<string> {
    return this.batched(() => this.insertDelivery(delivery));
  }

  protected insertDelivery(delivery: DeliveryRecord): string {
    const id = randomUUIDv7();
    const at = now();
    this.statement(
      'INSERT INTO deliveries (id, source, source_id, channel, recipient, text, state, attempts, error, parts, parts_sent, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
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
  async lastRoute(sessionKey: string): Promise<{ channel: string; recipient: string } | undefined> {
    const row = this.statement('SELECT channel, recipient FROM routes WHERE session_key = ?').get(
      sessionKey,
    ) as Row | undefined;
    return row
      ? { channel: row['channel'] as string, recipient: row['recipient'] as string }
      : undefined;
  }

  /** Record where the session was last reached; `onlyIfMissing` seeds without overwriting. */
  async setRoute(
    sessionKey: string,
    channel: string,
    recipient: string,
    onlyIfMissing = false,
  ): Promise<void> {
    const verb = onlyIfMissing ? 'INSERT OR IGNORE' : 'INSERT OR REPLACE';
    // At once, not batched: the next delivery's read of the route must see it.
    this.statement(
      `${verb} INTO routes (session_key, channel, recipient, updated_at) VALUES (?, ?, ?, ?)`,
    ).run(sessionKey, channel, recipient, now());
  }

  /** Ask the running server for something (e.g. an immediate heartbeat); returns its number. */
  async request(kind: string): Promise<number> {
    const result = this.statement(
      'INSERT INTO control_requests (kind, created_at) VALUES (?, ?)',
    ).run(kind, now());
    const seq = Number(result.lastInsertRowid);
    const why = whyNotRung(this.dataDir);
    if (why !== undefined) {
      // A request the server is never told of would wait for whatever makes it look next.
      this.statement('DELETE FROM control_requests WHERE seq = ?').run(seq);
      throw new Error(`the running server cannot be told of the request: its doorbell: ${why}`);
    }
    return seq;
  }

  /** Call `listener` when another process rang the doorbell after a change (see doorbell.ts). */
  watchOutside(listener: () => void, onError: (err: Error) => void): () => void {
    return watchDoorbell(this.dataDir, listener, onError);
  }

  /** True once a running server has taken the request. */
  async requestTaken(seq: number): Promise<boolean> {
    const row = this.statement('SELECT handled_at FROM control_requests WHERE seq = ?').get(seq) as
      | Row
      | undefined;
    return row !== undefined && row['handled_at'] !== null;
  }

  /** Take back a request nobody took (so a later start does not act on it); false if taken. */
  async withdrawRequest(seq: number): Promise<boolean> {
    const result = this.statement(
      'DELETE FROM control_requests WHERE seq = ? AND handled_at IS NULL',
    ).run(seq);
    return Number(result.changes) > 0;
  }

  /** Record a request's answer (what the command that asked waits for). */
  async answerRequest(seq: number, result: string): Promise<void> {
    this.statement(ANSWER_REQUEST).run(seq, result);
  }

  /** A request's answer, once the server has given it. */
  async requestResult(seq: number): Promise<string | undefined> {
    const row = this.statement('SELECT result FROM control_answers WHERE seq = ?').get(seq) as
      | Row
      | undefined;
    return typeof row?.['result'] === 'string' ? row['result'] : undefined;
  }

  /** The newest heartbeat request, when it was taken and never answered. */
  async heartbeatRequestUnserved(): Promise<number | undefined> {
    const row = this.statement(HEARTBEAT_REQUEST_UNSERVED).get(
      isoTime(Date.now() - TAKEN_REQUEST_KEEP_MS),
    ) as Row | undefined;
    return row === undefined ? undefined : Number(row['seq']);
  }

  /** Requests not yet handled; marks them handled. */
  async takeRequests(): Promise<Array<{ seq: number; kind: string }>> {
    // Looked for at every look at the store (a ring, a poll): a plain read first, so a look that
    // finds nothing never waits for the write lock (another process holding it would hold this
    // event loop up to the busy timeout).
    const waiting = this.statement(
      'SELECT 1 FROM control_requests WHERE handled_at IS NULL LIMIT 1',
    ).get();
    if (!waiting) return [];
    return this.transaction(() => {
      // Left by an asker killed before taking it back: nobody asks for it any longer.
      this.statement(EXPIRE_REQUESTS).run(isoTime(Date.now() - REQUEST_EXPIRY_MS));
      // Taken a day ago or more: nobody waits for them or their answers any longer.
      const taken = this.statement(TAKEN_BEFORE).get(isoTime(Date.now() - TAKEN_REQUEST_KEEP_MS));
      if (taken?.['seq'] != null) {
        this.statement(DROP_TAKEN).run(taken['seq']);
        this.statement(DROP_ANSWERS).run(taken['seq']);
      }
      const rows = this.statement(
        'SELECT seq, kind FROM control_requests WHERE handled_at IS NULL ORDER BY seq',
      ).all() as Row[];
      if (rows.length > 0)
        this.statement('UPDATE control_requests SET handled_at = ? WHERE handled_at IS NULL').run(
          now(),
        );
      return rows.map((row) => ({ seq: Number(row['seq']), kind: row['kind'] as string }));
    });
  }

  protected closeDatabase(): void {
    this.runBatch();
    this.closed = true;
    this.db.close();
  }
}
