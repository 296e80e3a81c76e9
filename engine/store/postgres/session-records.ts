/**
 * The runtime's session records on PostgreSQL: system events, history,
 * heartbeats, deliveries, last routes and operator requests, the same
 * records as the SQLite store's, shared by every instance. Each call is one
 * statement or one short transaction.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import {
  ASKED_NOW_PAGE,
  type DeliveryPartsSent,
  type DeliveryRecord,
  type HeartbeatDeliveryClaim,
  type HeartbeatResult,
  type HeartbeatRow,
  type NewEvent,
  type PendingHeartbeatDelivery,
  type Requeued,
  type SessionStore,
  type SystemEvent,
  type Turn,
  type TurnOwner,
} from '../../runtime/runtime-store.ts';
import {
  claimDelivery,
  endDelivery,
  pendingDeliveries,
  QUEUE_DELIVERY,
  RECOVER_DELIVERIES,
  saveDelivery,
} from './heartbeat-deliveries.ts';
import {
  newestHeartbeatRequestUnserved,
  REQUEST_EXPIRY_MS,
  TAKEN_REQUEST_KEEP_MS,
} from '../control-requests.ts';
import { restoredEventText } from '../stored-event.ts';
import { inTransaction } from './pool.ts';
import { isoTime } from './run-rows.ts';

type EventRecord = {
  seq: string;
  session_key: string;
  text: string;
  source: string;
  action_id: string | null;
  trusted: boolean;
  created_at: Date;
  consumed_by: string | null;
  /** Read where the events are listed with their heartbeats' states (events, one by seq). */
  set_aside?: boolean;
};

/** An event from its row; a wrapper's notice put back where a row lacks it (another writer). */
function toEvent(row: EventRecord): SystemEvent {
  return {
    seq: Number(row.seq),
    sessionKey: row.session_key,
    text: restoredEventText(row.text, row.trusted),
    source: row.source,
    actionId: row.action_id,
    trusted: row.trusted,
    createdAt: isoTime(row.created_at) ?? '',
    consumedBy: row.consumed_by,
    setAside: row.set_aside === true,
  };
}

const HEARTBEAT_REQUEST_UNSERVED = newestHeartbeatRequestUnserved(
  'now() - make_interval(secs => $1)',
);
const ANSWER_REQUEST = `INSERT INTO control_answers (seq, result) VALUES ($1, $2)
  ON CONFLICT (seq) DO UPDATE SET result = EXCLUDED.result`;

// Events with whether the heartbeat that consumed each failed (set it aside).
const WITH_SET_ASIDE = `SELECT e.*, (h.state = 'failed') AS set_aside
  FROM system_events e LEFT JOIN heartbeats h ON h.id = e.consumed_by`;

/**
 * Text as PostgreSQL stores it: a text column cannot hold NUL, which request content may carry
 * (SQLite stores it). It becomes U+FFFD, the replacement character, rather than failing the run.
 */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

/**
 * Append a system event on a connection (inside the caller's transaction). The text is kept
 * whole, notice included, unlike the SQLite store's rows: an instance of an earlier version
 * sharing the database during an upgrade reads these rows too.
 */
export async function insertEvent(db: pg.Pool | pg.PoolClient, event: NewEvent): Promise<void> {
  await db.query(
    `INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at)
     VALUES ($1, $2, $3, $4, $5, now())`,
    [
      storableText(event.sessionKey),
      storableText(event.text),
      event.source,
      event.actionId ?? null,
      event.trusted,
    ],
  );
}

/** A run's prompt and its reply in an agent's history, in one statement. */
export async function insertTurns(
  db: pg.Pool | pg.PoolClient,
  owner: TurnOwner,
  runId: string,
  prompt: string,
  reply: string,
): Promise<void> {
  await db.query(
    `INSERT INTO session_turns (agent_id, session_key, kind, role, text, run_id, created_at)
     VALUES ($1, $2, $3, 'user', $4, $6, now()), ($1, $2, $3, 'assistant', $5, $6, now())`,
    [
      owner.agentId,
      storableText(owner.sessionKey),
      owner.kind,
      storableText(prompt),
      storableText(reply),
      runId,
    ],
  );
}

/** Append events in order, in one statement (inside the caller's transaction). */
export async function insertEvents(db: pg.PoolClient, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.query(
    `INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at)
     SELECT key, text, source, action_id, trusted, now()
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[]) WITH ORDINALITY
       AS e(key, text, source, action_id, trusted, n)
     ORDER BY n`,
    [
      events.map((event) => storableText(event.sessionKey)),
      events.map((event) => storableText(event.text)),
      events.map((event) => event.source),
      events.map((event) => event.actionId ?? null),
      events.map((event) => event.trusted),
    ],
  );
}

/** Record a delivery's final outcome, on the pool or in the caller's transaction. */
export async function insertDelivery(
  db: pg.Pool | pg.PoolClient,
  delivery: DeliveryRecord,
): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO deliveries (id, source, source_id, channel, recipient, text, state, attempts,
       error, parts, parts_sent, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now(), now())`,
    [
      id,
      delivery.source,
      delivery.sourceId,
      delivery.channel,
      delivery.recipient === undefined ? null : storableText(delivery.recipient),
      storableText(delivery.text),
      delivery.state,
      delivery.attempts,
      delivery.error === undefined ? null : storableText(delivery.error),
      delivery.parts,
      delivery.partsSent,
    ],
  );
  return id;
}

/** Session records over a pool; the runtime store adds the action lifecycle. */
export class PostgresSessionRecords implements SessionStore {
  protected readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  async addEvent(event: NewEvent): Promise<void> {
    await insertEvent(this.pool, event);
  }

  async pendingEvents(sessionKey: string, limit: number): Promise<SystemEvent[]> {
    const { rows } = await this.pool.query<EventRecord>(
      `SELECT * FROM system_events WHERE session_key = $1 AND consumed_by IS NULL
       ORDER BY seq LIMIT $2`,
      [sessionKey, limit],
    );
    return rows.map(toEvent);
  }

  async pendingSizes(sessionKey: string, limit: number): Promise<{ seq: number; bytes: number }[]> {
    // octet_length takes a stored text's size without reading (or decompressing) the text.
    const { rows } = await this.pool.query<{ seq: string; bytes: number }>(
      `SELECT seq, octet_length(text) AS bytes FROM system_events
       WHERE session_key = $1 AND consumed_by IS NULL ORDER BY seq LIMIT $2`,
      [sessionKey, limit],
    );
    return rows.map((row) => ({ seq: Number(row.seq), bytes: Number(row.bytes) }));
  }

  async pendingAskedNow(sessionKey: string, signal?: AbortSignal): Promise<boolean> {
    // As the SQLite store reads it (and why as text): newest first, a page per query, the
    // action's text holding the field exactly.
    let below = Number.MAX_SAFE_INTEGER;
    while (!signal?.aborted) {
      const { rows } = await this.pool.query<{
        lowest: string | null;
        size: number;
        asked: boolean;
      }>(
        `SELECT MIN(p.seq) AS lowest, COUNT(*)::int AS size,
           COALESCE(BOOL_OR(strpos(a.action, '"mode":"now"') > 0
             OR strpos(a.action, '"wakeMode":"now"') > 0), false) AS asked
         FROM (SELECT seq, action_id FROM system_events
               WHERE session_key = $1 AND consumed_by IS NULL AND seq < $2
               ORDER BY seq DESC LIMIT $3) p
         LEFT JOIN actions a ON a.id = p.action_id`,
        [sessionKey, below, ASKED_NOW_PAGE],
      );
      const read = rows[0];
      if (!read || read.asked) return read?.asked === true;
      if (read.lowest === null || read.size < ASKED_NOW_PAGE) return false;
      below = Number(read.lowest);
    }
    return false;
  }

  async events(sessionKey: string, limit: number): Promise<SystemEvent[]> {
    const { rows } = await this.pool.query<EventRecord>(
      `${WITH_SET_ASIDE} WHERE e.session_key = $1 ORDER BY e.seq DESC LIMIT $2`,
      [sessionKey, limit],
    );
    return rows.map(toEvent);
  }

  async requeueEvent(seq: number): Promise<Requeued> {
    const { rows } = await this.pool.query<EventRecord>(`${WITH_SET_ASIDE} WHERE e.seq = $1`, [
      seq,
    ]);
    const row = rows[0];
    if (!row) return { refused: 'unknown' };
    if (row.set_aside !== true) return { refused: 'not-set-aside', consumedBy: row.consumed_by };
    // One transaction, the original's row locked: two commands at once make one copy.
    return inTransaction(this.pool, async (client): Promise<Requeued> => {
      await client.query('SELECT 1 FROM system_events WHERE seq = $1 FOR UPDATE', [seq]);
      const copy = await client.query<{ seq: string }>(
        'SELECT seq FROM system_events WHERE copy_of = $1 ORDER BY seq LIMIT 1',
        [seq],
      );
      const found = copy.rows[0];
      if (found) return { refused: 'requeued', copy: Number(found.seq) };
      // The stored form is copied as it is (an earlier version's rows included).
      const copied = await client.query<{ seq: string }>(
        `INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at, copy_of)
         SELECT session_key, text, source, action_id, trusted, now(), seq FROM system_events
         WHERE seq = $1 RETURNING seq`,
        [seq],
      );
      return { seq: Number(copied.rows[0]?.seq) };
    });
  }

  async history(owner: TurnOwner, limit: number): Promise<Turn[]> {
    const { rows } = await this.pool.query<{
      role: 'user' | 'assistant';
      text: string;
      run_id: string | null;
      created_at: Date;
    }>(
      `SELECT role, text, run_id, created_at FROM session_turns
       WHERE agent_id = $1 AND session_key = $2 AND kind = $3 ORDER BY seq DESC LIMIT $4`,
      [owner.agentId, owner.sessionKey, owner.kind, limit],
    );
    return rows.reverse().map((row) => ({
      role: row.role,
      text: row.text,
      runId: row.run_id,
      createdAt: isoTime(row.created_at) ?? '',
    }));
  }

  async historySizes(owner: TurnOwner, limit: number): Promise<number[]> {
    const { rows } = await this.pool.query<{ bytes: number }>(
      `SELECT octet_length(text) AS bytes FROM session_turns
       WHERE agent_id = $1 AND session_key = $2 AND kind = $3 ORDER BY seq DESC LIMIT $4`,
      [owner.agentId, owner.sessionKey, owner.kind, limit],
    );
    return rows.map((row) => Number(row.bytes));
  }

  async addTurns(owner: TurnOwner, runId: string, prompt: string, reply: string): Promise<void> {
    await insertTurns(this.pool, owner, runId, prompt, reply);
  }

  async claimHeartbeatTurns(agentId: string): Promise<void> {
    await this.pool.query(
      "UPDATE session_turns SET agent_id = $1 WHERE agent_id IS NULL AND kind = 'heartbeat'",
      [agentId],
    );
  }

  async startHeartbeat(reason: string): Promise<string> {
    const id = randomUUID();
    await this.pool.query(
      "INSERT INTO heartbeats (id, reason, state, started_at) VALUES ($1, $2, 'running', now())",
      [id, reason],
    );
    return id;
  }

  async setHeartbeatGroup(id: string, pgid: number | null): Promise<void> {
    await this.pool.query(
      'UPDATE heartbeats SET runner_host = $2, runner_pgid = $3 WHERE id = $1',
      [id, hostname(), pgid],
    );
  }

  /** Called by a new leader: every heartbeat still running was a previous leader's. */
  async recoverHeartbeats(
    keep: readonly string[] = [],
  ): Promise<Array<{ id: string; pgid: number }>> {
    const { rows } = await this.pool.query<{
      id: string;
      runner_host: string | null;
      runner_pgid: number | null;
    }>(
      `UPDATE heartbeats SET state = 'failed', error = 'interrupted: its instance stopped',
         finished_at = now()
       WHERE state = 'running' AND NOT (id = ANY($1::text[]))
       RETURNING id, runner_host, runner_pgid`,
      [keep],
    );
    // A reply delivery in flight was the previous leader's: due again (its writes are fenced),
    // but one this instance is still making.
    await this.pool.query(RECOVER_DELIVERIES, [keep]);
    // A process group is only this host's to end.
    return rows.flatMap((row) =>
      row.runner_pgid !== null && row.runner_host === hostname()
        ? [{ id: row.id, pgid: row.runner_pgid }]
        : [],
    );
  }

  async finishHeartbeat(id: string, result: HeartbeatResult): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      // Only a heartbeat still running: one a new leader failed (its leader was taken for dead)
      // keeps that record, consumes nothing and adds nothing to history.
      const { rowCount } = await client.query(
        `UPDATE heartbeats SET state = $2, finished_at = now(), events = $3, reply = $4, ack = $5,
           error = $6 WHERE id = $1 AND state = 'running'`,
        [
          id,
          result.state,
          result.events.length,
          result.reply === undefined ? null : storableText(result.reply),
          result.ack ?? null,
          result.error === undefined ? null : storableText(result.error),
        ],
      );
      if (rowCount === 0) return false;
      // Due at once: the first attempt follows the end.
      if (result.state === 'done' && result.deliver) await client.query(QUEUE_DELIVERY, [id]);
      const consumed = result.state === 'done' ? result.events : (result.setAside ?? []);
      if (consumed.length > 0) {
        await client.query(
          'UPDATE system_events SET consumed_by = $1 WHERE seq = ANY($2::bigint[]) AND consumed_by IS NULL',
          [id, consumed],
        );
      }
      const turns = result.turns;
      if (turns) await insertTurns(client, turns.owner, id, turns.prompt, turns.reply);
      for (const seq of result.answers ?? []) {
        await client.query(ANSWER_REQUEST, [seq, `heartbeat ${id}`]);
      }
      return true;
    });
  }

  async pendingHeartbeatDeliveries(
    limit: number,
    afterId = '',
  ): Promise<PendingHeartbeatDelivery[]> {
    return pendingDeliveries(this.pool, limit, afterId);
  }

  async claimHeartbeatDelivery(
    id: string,
    nowMs: number,
    staleBeforeMs: number,
  ): Promise<HeartbeatDeliveryClaim | undefined> {
    return claimDelivery(this.pool, id, nowMs, staleBeforeMs);
  }

  async saveHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    progress: DeliveryPartsSent,
    retry?: { atMs: number; refund?: boolean },
  ): Promise<boolean> {
    return saveDelivery(this.pool, claim, progress, retry);
  }

  async endHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    record: DeliveryRecord,
    note?: NewEvent,
  ): Promise<boolean> {
    return inTransaction(this.pool, async (client) => {
      if (!(await endDelivery(client, claim))) return false;
      await insertDelivery(client, record);
      if (note) await insertEvent(client, note);
      return true;
    });
  }

  async heartbeats(limit: number): Promise<HeartbeatRow[]> {
    const { rows } = await this.pool.query<{
      id: string;
      reason: string;
      state: HeartbeatRow['state'];
      started_at: Date;
      finished_at: Date | null;
      events: number;
      reply: string | null;
      ack: boolean | null;
      error: string | null;
      runner_pgid: number | null;
    }>(
      `SELECT id, reason, state, started_at, finished_at, events, reply, ack, error, runner_pgid
       FROM heartbeats ORDER BY started_at DESC LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      ...row,
      started_at: isoTime(row.started_at) ?? '',
      finished_at: isoTime(row.finished_at),
      ack: row.ack === null ? null : row.ack ? 1 : 0,
    }));
  }

  async recordDelivery(delivery: DeliveryRecord): Promise<string> {
    return insertDelivery(this.pool, delivery);
  }

  async lastRoute(sessionKey: string): Promise<{ channel: string; recipient: string } | undefined> {
    const { rows } = await this.pool.query<{ channel: string; recipient: string }>(
      'SELECT channel, recipient FROM routes WHERE session_key = $1',
      [sessionKey],
    );
    return rows[0] ? { channel: rows[0].channel, recipient: rows[0].recipient } : undefined;
  }

  async setRoute(
    sessionKey: string,
    channel: string,
    recipient: string,
    onlyIfMissing = false,
  ): Promise<void> {
    const conflict = onlyIfMissing
      ? 'DO NOTHING'
      : 'DO UPDATE SET channel = EXCLUDED.channel, recipient = EXCLUDED.recipient, updated_at = now()';
    await this.pool.query(
      `INSERT INTO routes (session_key, channel, recipient, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (session_key) ${conflict}`,
      [storableText(sessionKey), channel, storableText(recipient)],
    );
  }

  async request(kind: string): Promise<number> {
    const { rows } = await this.pool.query<{ seq: string }>(
      'INSERT INTO control_requests (kind, created_at) VALUES ($1, now()) RETURNING seq',
      [kind],
    );
    return Number(rows[0]?.seq);
  }

  async requestTaken(seq: number): Promise<boolean> {
    const { rows } = await this.pool.query(
      'SELECT 1 FROM control_requests WHERE seq = $1 AND handled_at IS NOT NULL',
      [seq],
    );
    return rows.length > 0;
  }

  async withdrawRequest(seq: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'DELETE FROM control_requests WHERE seq = $1 AND handled_at IS NULL',
      [seq],
    );
    return rowCount !== 0;
  }

  async answerRequest(seq: number, result: string): Promise<void> {
    await this.pool.query(ANSWER_REQUEST, [seq, result]);
  }

  async requestResult(seq: number): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ result: string }>(
      'SELECT result FROM control_answers WHERE seq = $1',
      [seq],
    );
    return rows[0]?.result;
  }

  async heartbeatRequestUnserved(): Promise<number | undefined> {
    const { rows } = await this.pool.query<{ seq: string }>(HEARTBEAT_REQUEST_UNSERVED, [
      TAKEN_REQUEST_KEEP_MS / 1000,
    ]);
    const row = rows[0];
    return row === undefined ? undefined : Number(row.seq);
  }

  async takeRequests(): Promise<Array<{ seq: number; kind: string }>> {
    // Each request is taken by one instance: another taking requests at once skips these rows.
    // One left by an asker killed before taking it back is dropped instead (nobody asks for it
    // any longer), in the same statement: one round trip per look, as before. So are those taken
    // a day ago or more, with their answers: the newest such and every taken one older by seq,
    // never a newer one alone (a clock stepped back would leave an older heartbeat request as
    // the newest); rows another instance drops at once are skipped, not waited for.
    const { rows } = await this.pool.query<{ seq: string; kind: string }>(
      `WITH expired AS (
         DELETE FROM control_requests
         WHERE handled_at IS NULL AND created_at < now() - make_interval(secs => $1)),
       bound AS (
         SELECT max(seq) AS seq FROM control_requests
         WHERE handled_at < now() - make_interval(secs => $2)),
       dropped AS (
         DELETE FROM control_requests WHERE seq IN (SELECT seq FROM control_requests
           WHERE handled_at IS NOT NULL AND seq <= (SELECT seq FROM bound) FOR UPDATE SKIP LOCKED)),
       unasked AS (
         DELETE FROM control_answers WHERE seq IN (SELECT seq FROM control_answers
           WHERE seq <= (SELECT seq FROM bound) FOR UPDATE SKIP LOCKED))
       UPDATE control_requests SET handled_at = now()
       WHERE seq IN (SELECT seq FROM control_requests
                     WHERE handled_at IS NULL AND created_at >= now() - make_interval(secs => $1)
                     ORDER BY seq FOR UPDATE SKIP LOCKED)
       RETURNING seq, kind`,
      [REQUEST_EXPIRY_MS / 1000, TAKEN_REQUEST_KEEP_MS / 1000],
    );
    return rows
      .map((row) => ({ seq: Number(row.seq), kind: row.kind }))
      .sort((a, b) => a.seq - b.seq);
  }
}
