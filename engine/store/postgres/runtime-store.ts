/**
 * The runtime store on PostgreSQL, shared by every instance: claims take
 * the head of each session under a lease (FOR UPDATE SKIP LOCKED, one
 * running action per session enforced by a unique index), every write about
 * a run is fenced by the claim (owner and attempt), leases and backoff use
 * the database's clock, and a run whose instance died is claimed again once
 * its lease expires. The session records are in session-records.ts.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import { testFaults } from '../../faults.ts';
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
import { inTransaction } from './pool.ts';
import {
  insertDelivery,
  insertEvent,
  insertEvents,
  insertTurns,
  PostgresSessionRecords,
} from './session-records.ts';
import {
  ALL_HEADS,
  CLAIM,
  END_TURN,
  TURN_LOCK,
  EVERY_UNFINISHED,
  RUNNABLE_NOW,
  WINDOW,
  WINDOW_HEADS,
  WITHIN_WINDOW,
} from './claim-queries.ts';
import { readRun, RUN_COLUMNS, type RunRecord } from './run-rows.ts';

export type PostgresRuntimeOptions = {
  /** This instance's name in leases (unique per process). */
  owner: string;
  /** How long a claim or the lead lasts without renewal. */
  leaseMs: number;
};

const UNREADABLE = JSON.stringify(UNREADABLE_OUTCOME);
// Any fixed number: one instance at a time applies wakes, so the main session's events keep
// the order the wakes were accepted in.
const WAKE_LOCK = 0x77616b65; // 'wake'
const LEADER = 'heartbeat';

// A claimed run is written to only while it is still this instance's and this attempt.
const FENCE = "id = $1 AND attempts = $2 AND lease_owner = $3 AND state = 'running'";

// Finished actions one prune statement deletes.
const PRUNE_BATCH = 1000;

/**
 * How often at most a claim walks every session's head to keep turn order with sessions beyond
 * the window (the walk costs two index probes per session with work: about 10 ms per 1,000
 * sessions): a session beyond a full window waits at most this long plus a run for its turn.
 */
const FAIR_LOOK_MS = 5_000;

const COUNT_STATES = 'SELECT state, count(*)::int AS n FROM actions GROUP BY state';

/** A session's turn ended, under its lock (TURN_LOCK), in the caller's transaction. */
async function endTurn(client: pg.PoolClient, id: string): Promise<void> {
  await client.query(TURN_LOCK, [id]);
  await client.query(END_TURN, [id]);
}

/** A claim's key among this instance's leases: a later attempt of the run is another claim. */
function claimKey(claim: Claim): string {
  return `${claim.id}#${claim.attempts}`;
}

/** The runtime store over a pool the caller owns (several stores of one process may share it). */
export class PostgresRuntimeStore extends PostgresSessionRecords implements RuntimeStore {
  readonly leadership: Leadership;
  private readonly owner: string;
  private readonly leaseMs: number;
  private readonly host = hostname();
  private renewedAt = 0;
  // When the last claim walked every session's head (performance.now()).
  private walkedAt = Number.NEGATIVE_INFINITY;
  // When the statement that last set each claim's lease was sent (performance.now()), by claim.
  private readonly leasedAt = new Map<string, number>();

  constructor(pool: pg.Pool, options: PostgresRuntimeOptions) {
    super(pool);
    this.owner = options.owner;
    this.leaseMs = options.leaseMs;
    this.leadership = {
      lead: () => this.lead(),
      // Run out, not deleted: the next instance leads at its next check all the same, and the
      // row says when the lead was given up (`heartbeat now` waits for a successor only then).
      resign: async () => {
        await this.pool.query(
          "UPDATE leases SET until = now() - interval '1 millisecond' WHERE name = $1 AND owner = $2 AND until > now()",
          [LEADER, this.owner],
        );
      },
    };
  }

  /** Take the lead when it is free or expired, or keep it; true while this instance leads. */
  private async lead(): Promise<boolean> {
    const { rows } = await this.pool.query(
      `INSERT INTO leases AS l (name, owner, until)
         VALUES ($1, $2, now() + $3 * interval '1 millisecond')
       ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
         WHERE l.owner = EXCLUDED.owner OR l.until < now()
       RETURNING owner`,
      [LEADER, this.owner, this.leaseMs],
    );
    return rows.length > 0;
  }

  async leaderLease(): Promise<LeaderLease> {
    // Compared as text-free numbers on the database's clock; 'infinity' (no hookgate writes it)
    // reads as a lease that runs on.
    const { rows } = await this.pool.query<{ left: number | null }>(
      `SELECT CASE WHEN isfinite(until) THEN EXTRACT(EPOCH FROM (until - now())) * 1000
                   ELSE 'Infinity'::float8 END::float8 AS left
       FROM leases WHERE name = $1`,
      [LEADER],
    );
    const left = rows[0]?.left;
    if (left === undefined || left === null) return { kind: 'none' };
    return left > 0 ? { kind: 'held', leftMs: Math.ceil(left) } : { kind: 'lapsed', agoMs: -left };
  }

  async claimHeads(room: number, busy: ReadonlySet<string>): Promise<RunRow[]> {
    if (room <= 0) return [];
    const params = [this.owner, this.leaseMs, [...busy], room];
    // A negative control of the kill test only: any runnable action counts as a head.
    if (testFaults.has('claim-without-head-rule')) return this.claimFrom(EVERY_UNFINISHED, params);
    // Turn order over every session needs the walk of all heads whenever the window's sessions
    // have all had their turn: at most once per FAIR_LOOK_MS; in between, the window's sessions
    // take turns among themselves.
    const fair = performance.now() - this.walkedAt >= FAIR_LOOK_MS;
    const claimed = await this.claimFrom(WINDOW_HEADS, params, fair ? WITHIN_WINDOW : '');
    if (claimed.length >= room) return claimed;
    try {
      return [...claimed, ...(await this.claimBeyondWindow(room - claimed.length, busy, claimed))];
    } catch (err) {
      // What the first statement claimed is this instance's now: it must reach the worker (or
      // it would sit running, unrun, until its lease expired). The next pass looks again.
      if (claimed.length > 0) return claimed;
      throw err;
    }
  }

  /**
   * The window may be one session's backlog, or hold only sessions that have had their turn:
   * then look at every session's head (two index probes per session with work).
   */
  private async claimBeyondWindow(
    room: number,
    busy: ReadonlySet<string>,
    claimed: readonly RunRow[],
  ): Promise<RunRow[]> {
    const { rows } = await this.pool.query<{ full: boolean }>(
      `SELECT count(*) >= ${WINDOW} AS full FROM (SELECT 1 FROM actions
         WHERE state IN ('queued', 'running') ORDER BY seq LIMIT ${WINDOW}) w`,
    );
    if (!rows[0]?.full) return [];
    this.walkedAt = performance.now();
    return this.claimFrom(ALL_HEADS, [
      this.owner,
      this.leaseMs,
      [...busy, ...claimed.map(sessionOf)],
      room,
    ]);
  }

  private async claimFrom(heads: string, params: unknown[], also = ''): Promise<RunRow[]> {
    let rows: Array<RunRecord & { place: string }>;
    const sent = performance.now();
    try {
      rows = (await this.pool.query<RunRecord & { place: string }>(CLAIM(heads, also), params))
        .rows;
    } catch (err) {
      // Two claims raced for one session and the database refused the second: nothing was
      // claimed by this statement; the next pass looks again.
      if ((err as { code?: string }).code === '23505') return [];
      throw err;
    }
    const runs: RunRow[] = [];
    this.forgetLapsed(sent);
    // In turn order, as they were chosen (RETURNING keeps no order).
    rows.sort((a, b) => Number(a.place) - Number(b.place) || Number(a.seq) - Number(b.seq));
    for (const row of rows) {
      const run = readRun(row);
      if (run) {
        this.leasedAt.set(claimKey(run), sent);
        runs.push(run);
      } else await this.endUnreadable(row.id);
    }
    return runs;
  }

  /** A row no hook could have written ends at once, so it never holds back its session. */
  private async endUnreadable(id: string): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      await client.query(
        `UPDATE actions SET state = 'dead', outcome = $2, finished_at = now(), lease_owner = NULL
         WHERE id = $1`,
        [id, UNREADABLE],
      );
      await endTurn(client, id);
    });
  }

  async applyWakes(
    mainKey: string,
    limit: number,
  ): Promise<{ applied: number; modes: Array<'now' | 'next-heartbeat'> }> {
    // Most passes find none: one read instead of a transaction on every instance.
    const { rows: pending } = await this.pool.query(
      "SELECT 1 FROM actions WHERE session_key IS NULL AND state = 'queued' LIMIT 1",
    );
    if (pending.length === 0) return { applied: 0, modes: [] };
    return inTransaction(this.pool, async (client) => {
      const { rows: locked } = await client.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_xact_lock($1) AS ok',
        [WAKE_LOCK],
      );
      // Another instance is applying wakes now: they are its to apply, in order.
      if (!locked[0]?.ok) return { applied: 0, modes: [] };
      const { rows } = await client.query<{ seq: string; id: string; action: string }>(
        `UPDATE actions SET state = 'done', attempts = attempts + 1, started_at = now(),
           finished_at = now(), outcome = '{"status":"ok"}'
         WHERE seq IN (SELECT seq FROM actions WHERE session_key IS NULL AND state = 'queued'
                       ORDER BY seq LIMIT $1)
         RETURNING seq, id, action::text AS action`,
        [limit],
      );
      rows.sort((a, b) => Number(a.seq) - Number(b.seq));
      const unreadable: string[] = [];
      const events: NewEvent[] = [];
      const modes: Array<'now' | 'next-heartbeat'> = [];
      for (const row of rows) {
        const wake = readWake(row.action);
        if (!wake) {
          unreadable.push(row.id);
          continue;
        }
        // The row's id, not the stored one: the row is what is finished.
        events.push({ ...wakeEvent(wake, mainKey), actionId: row.id });
        modes.push(wake.mode);
      }
      if (unreadable.length > 0)
        await client.query(`UPDATE actions SET state = 'dead', outcome = $2 WHERE id = ANY($1)`, [
          unreadable,
          UNREADABLE,
        ]);
      await insertEvents(client, events);
      return { applied: rows.length, modes };
    });
  }

  async hasRunnable(): Promise<boolean> {
    const { rows } = await this.pool.query<{ any: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM actions WHERE session_key IS NULL AND state = 'queued')
         OR EXISTS (${RUNNABLE_NOW(ALL_HEADS, '$1')}) AS any`,
      [[]],
    );
    return rows[0]?.any === true;
  }

  async setRunnerGroup(claim: Claim, pgid: number | null): Promise<void> {
    await this.pool.query(`UPDATE actions SET runner_host = $4, runner_pgid = $5 WHERE ${FENCE}`, [
      claim.id,
      claim.attempts,
      this.owner,
      this.host,
      pgid,
    ]);
  }

  async finish(
    claim: Claim,
    state: 'done' | 'failed' | 'dead',
    outcome: Outcome,
    event?: NewEvent,
    turns?: RunTurns,
    delivery?: DeliveryRecord,
  ): Promise<boolean> {
    // Ended here, whether the fence let the end through or not: no longer a lease this instance keeps.
    this.leasedAt.delete(claimKey(claim));
    return inTransaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `UPDATE actions SET state = $4, outcome = $5, finished_at = now(), lease_owner = NULL,
           lease_until = NULL, runner_pgid = NULL
         WHERE ${FENCE}`,
        [claim.id, claim.attempts, this.owner, state, JSON.stringify(outcome)],
      );
      if (rowCount === 0) return false;
      await endTurn(client, claim.id);
      if (turns) await insertTurns(client, turns.owner, claim.id, turns.prompt, turns.reply);
      if (event) await insertEvent(client, event);
      if (delivery) await insertDelivery(client, delivery);
      return true;
    });
  }

  async saveOutcome(claim: Claim, outcome: Outcome, turns?: RunTurns): Promise<boolean> {
    const save = async (db: pg.Pool | pg.PoolClient) => {
      const { rowCount } = await db.query(`UPDATE actions SET outcome = $4 WHERE ${FENCE}`, [
        claim.id,
        claim.attempts,
        this.owner,
        JSON.stringify(outcome),
      ]);
      if (rowCount === 0) return false;
      if (turns) await insertTurns(db, turns.owner, claim.id, turns.prompt, turns.reply);
      return true;
    };
    // One statement is atomic on its own; with the turns, a transaction.
    return turns ? inTransaction(this.pool, save) : save(this.pool);
  }

  async requeue(
    claim: Claim,
    delayMs: number,
    outcome: Outcome,
    options: { refundAttempt?: boolean } = {},
  ): Promise<boolean> {
    this.leasedAt.delete(claimKey(claim));
    // A run that waits for a retry ends its session's turn; one given back at once keeps it.
    if (delayMs > 0)
      return inTransaction(this.pool, async (client) => {
        if (!(await this.sendBack(client, claim, delayMs, outcome, options))) return false;
        await endTurn(client, claim.id);
        return true;
      });
    return this.sendBack(this.pool, claim, delayMs, outcome, options);
  }

  private async sendBack(
    db: pg.Pool | pg.PoolClient,
    claim: Claim,
    delayMs: number,
    outcome: Outcome,
    options: { refundAttempt?: boolean },
  ): Promise<boolean> {
    const { rowCount } = await db.query(
      `UPDATE actions SET state = 'queued', outcome = $4,
         next_attempt_at = CASE WHEN $5::float8 > 0 THEN now() + $5 * interval '1 millisecond'
                                ELSE '-infinity' END,
         attempts = greatest(0, attempts - $6), lease_owner = NULL, lease_until = NULL,
         runner_pgid = NULL
       WHERE ${FENCE}`,
      [
        claim.id,
        claim.attempts,
        this.owner,
        JSON.stringify(outcome),
        delayMs,
        options.refundAttempt ? 1 : 0,
      ],
    );
    return rowCount !== 0;
  }

  async renewLeases(running: readonly Claim[]): Promise<void> {
    // Every quarter of the lease: a turn in progress is stopped once three quarters have passed
    // since the last renewal was sent (run-step.ts), so two renewals may fail or come late
    // before it is; more often would only add writes.
    if (running.length === 0 || Date.now() - this.renewedAt < this.leaseMs / 4) return;
    const asked = Date.now();
    const sent = performance.now();
    // Only the claims still running here: a run whose end could not be written (the database
    // was down) is no longer run by anyone, and its lease must expire for it to be taken over.
    const { rows } = await this.pool.query<Claim>(
      `UPDATE actions SET lease_until = now() + $2 * interval '1 millisecond'
       WHERE lease_owner = $1 AND state = 'running'
         AND (id, attempts) IN (SELECT * FROM unnest($3::text[], $4::int[]))
       RETURNING id, attempts`,
      [this.owner, this.leaseMs, running.map((run) => run.id), running.map((run) => run.attempts)],
    );
    // Only what the statement kept: a run another instance took over is not this one's again.
    for (const claim of rows) this.leasedAt.set(claimKey(claim), sent);
    // Only a renewal that went through counts: after a failure the next tick tries again.
    this.renewedAt = asked;
  }

  holdsLease(claim: Claim, reserve = 0.1): boolean {
    const from = this.leasedAt.get(claimKey(claim));
    // The database set the lease's end after this process sent the statement, so this clock
    // reaches the end first; the reserve covers the steps between the check and its effect.
    return from !== undefined && performance.now() - from < this.leaseMs * (1 - reserve);
  }

  /** A turn in progress looks twenty times per lease (at least every 10 ms). */
  get leaseWatchMs(): number {
    return Math.max(10, Math.floor(this.leaseMs / 20));
  }

  /**
   * Forget leases that have run out by this clock (they answer false anyway): those of runs
   * whose end never reached the database. A run ended here is forgotten at its end, so this
   * walks only the runs in flight.
   */
  private forgetLapsed(nowMs: number): void {
    for (const [key, from] of this.leasedAt)
      if (nowMs - from >= this.leaseMs) this.leasedAt.delete(key);
  }

  /**
   * Nothing is reset: other instances' runs are theirs, and a dead instance's run is claimed
   * again when its lease expires. What is returned are the runner groups on this host whose
   * instance's lease has expired, to end before their runs are taken over.
   */
  async recoverInterrupted(): Promise<Array<{ id: string; pgid: number | null }>> {
    const { rows } = await this.pool.query<{ id: string; pgid: number }>(
      `UPDATE actions a SET runner_pgid = NULL
       FROM (SELECT id, runner_pgid FROM actions
             WHERE state = 'running' AND lease_until < now() AND runner_host = $1
               AND runner_pgid IS NOT NULL FOR UPDATE SKIP LOCKED) old
       WHERE a.id = old.id RETURNING old.id, old.runner_pgid AS pgid`,
      [this.host],
    );
    return rows.map((row) => ({ id: row.id, pgid: row.pgid }));
  }

  async runs(limit: number, state?: ActionState): Promise<RunRow[]> {
    const { rows } = state
      ? await this.pool.query<RunRecord>(
          `SELECT ${RUN_COLUMNS.join(', ')} FROM actions WHERE state = $1 ORDER BY seq DESC LIMIT $2`,
          [state, limit],
        )
      : await this.pool.query<RunRecord>(
          `SELECT ${RUN_COLUMNS.join(', ')} FROM actions ORDER BY seq DESC LIMIT $1`,
          [limit],
        );
    return rows.flatMap((row) => readRun(row) ?? []);
  }

  async run(id: string): Promise<RunRow | undefined> {
    const { rows } = await this.pool.query<RunRecord>(
      `SELECT ${RUN_COLUMNS.join(', ')} FROM actions WHERE id = $1`,
      [id],
    );
    return rows[0] ? readRun(rows[0]) : undefined;
  }

  async states(ids: readonly string[]): Promise<Map<string, ActionState>> {
    const { rows } = await this.pool.query<{ id: string; state: ActionState }>(
      'SELECT id, state FROM actions WHERE id = ANY($1::text[])',
      [[...ids]],
    );
    return new Map(rows.map((row) => [row.id, row.state]));
  }

  async countByState(): Promise<Record<ActionState, number>> {
    const counts: Record<ActionState, number> = {
      queued: 0,
      running: 0,
      done: 0,
      failed: 0,
      dead: 0,
    };
    const { rows } = await this.pool.query<{ state: ActionState; n: number }>(COUNT_STATES);
    for (const row of rows) if (row.state in counts) counts[row.state] = row.n;
    return counts;
  }

  async retryDead(id: string, options: { failed?: boolean } = {}): Promise<boolean> {
    // Never `done`: a turn that succeeded is not run twice.
    const states = options.failed ? ['dead', 'failed'] : ['dead'];
    // The outcome is edited here, not as jsonb: a reply may hold \u0000, which jsonb refuses.
    return inTransaction(this.pool, async (client) => {
      const { rows } = await client.query<{ outcome: string | null }>(
        'SELECT outcome FROM actions WHERE id = $1 AND state = ANY($2::text[]) FOR UPDATE',
        [id, states],
      );
      const row = rows[0];
      if (!row) return false;
      const kept = outcomeForRetry(row.outcome ? (JSON.parse(row.outcome) as Outcome) : null);
      await client.query(
        `UPDATE actions SET state = 'queued', attempts = 0, next_attempt_at = '-infinity',
           lease_owner = NULL, lease_until = NULL, outcome = $2
         WHERE id = $1`,
        [id, kept ? JSON.stringify(kept) : null],
      );
      await endTurn(client, id);
      return true;
    });
  }

  async pruneFinished(olderThanMs: number): Promise<number> {
    let total = 0;
    // Short transactions: a long DELETE would pin the MVCC horizon of the hot table.
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM actions WHERE seq IN (
           SELECT seq FROM actions WHERE state IN ('done', 'failed', 'dead')
             AND finished_at < now() - $1 * interval '1 millisecond'
           ORDER BY seq LIMIT ${PRUNE_BATCH})`,
        [olderThanMs],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < PRUNE_BATCH) return total;
    }
  }

  async close(): Promise<void> {
    // The pool belongs to whoever opened it (accepting shares it).
  }
}

function sessionOf(run: RunRow): string {
  return run.action.kind === 'agent' ? run.action.sessionKey : '';
}
