/**
 * The failed-auth limiter shared by every instance on one PostgreSQL database
 * (the UNLOGGED `auth_failures` table). A failure is one upsert that applies
 * the counts (fixed and sliding windows) and the lockout by the database's clock and answers the
 * lock, if any; a periodic read of the addresses locked now brings locks
 * started on other instances into the local view that `lockedFor` answers
 * from; the same loop deletes rows whose window and lock are both over.
 *
 * Clocks: rows hold the database's time only. Each read also returns the
 * database's clock, which gives this host's offset to it; a failure's time is
 * sent as this host's time plus that offset, and lock ends come back through
 * the same offset, so clock skew between hosts never shifts a window or a
 * lock. The offset moves only when a reading disagrees by more than a second
 * (a clock stepped): a round trip's jitter must not move windows back and
 * forth by milliseconds between one failure and the next.
 *
 * Time: every statement is bounded on this side (bounded-statements.ts), so a database that
 * stops answering holds neither the counts' connection nor the reads' loop past
 * `STATEMENT_DEADLINE_MS`, and the next statement opens a fresh connection: the instance is
 * back on the shared counts as soon as the database answers one. A database that answers
 * slowly ends them itself a second before (`serverTimeoutMs`), so what this side gave up on
 * does not run on there. Counts and resets waiting meanwhile are bounded in number too
 * (`MAX_PENDING_WRITES`, then refused at once: a count is counted in memory by the wrapper,
 * limiter-fallback.ts, a reset dropped).
 */
import type pg from 'pg';
import { createLockouts } from '../../lockouts.ts';
import {
  type AuthFailureLimiter,
  type LimiterOptions,
  MAX_FAILURE_TIMES,
  type RateLimitSettings,
} from '../../rate-limit.ts';
import { boundedStatements } from './bounded-statements.ts';
import { createCountingView } from './counting-view.ts';

export type PostgresLimiterOptions = LimiterOptions & {
  /** How often the locks other instances started are read (default 1 s). */
  refreshMs?: number;
  /** How often rows whose window and lock are both over are deleted (default 30 s). */
  sweepMs?: number;
  /** This host's clock, the one callers' `nowMs` come from (default Date.now). */
  clock?: () => number;
  /**
   * Where the counts and resets go (default: the pool given): a pool of their own keeps a
   * flood of them from queueing ahead of anything else, and of the reads of the locks.
   */
  countsPool?: pg.Pool;
  /** Counts and resets that may wait for the database at once (default MAX_PENDING_WRITES). */
  maxPendingWrites?: number;
  /** How long each statement may take, its wait for a connection included (default STATEMENT_DEADLINE_MS). */
  statementDeadlineMs?: number;
};

export const DEFAULT_REFRESH_MS = 1000;
export const DEFAULT_SWEEP_MS = 30_000;
/**
 * How long any of the limiter's statements may take, its wait for a connection included. Past
 * the 2 s a refusal waits for its count (limiter-fallback.ts): one that answers late still
 * counts there instead of being lost, and a database that answers in time is not taken for
 * gone. The counts' connection ends its statements on the server a second before (backend.ts).
 */
export const STATEMENT_DEADLINE_MS = 5000;

/**
 * How long the server may run one of the limiter's statements given `deadlineMs` on this side:
 * a second less (half of a shorter one), so one this side gave up on is not still running there.
 * Pure.
 */
export function serverTimeoutMs(deadlineMs: number): number {
  return deadlineMs - Math.min(1000, Math.floor(deadlineMs / 2));
}
/**
 * Counts and resets waiting for the database at once, per instance: many more than the counts'
 * one connection gets through within the deadline, few enough that a flood of wrong tokens
 * while the database does not answer keeps little in memory.
 */
export const MAX_PENDING_WRITES = 1000;
// Reads of the locks run one at a time; a few left waiting past their deadline (a main pool
// whose connections are all busy) may still hold a place in its queue.
const MAX_PENDING_READS = 4;
// Rows deleted per statement, and statements per sweep: short statements, bounded work.
const SWEEP_BATCH = 1000;
const SWEEP_BATCHES = 10;
// How far a reading of the database's clock may stray (beyond its own round trip) before the
// offset follows it.
const CLOCK_TOLERANCE_MS = 1000;

// $1 client, $2 the failure's time (database clock, epoch ms), $3 maxFailures, $4 window ms,
// $5 lockout ms.
const AT = `(timestamptz 'epoch' + $2::bigint * interval '1 millisecond')`;
const LOCKOUT = `$5::bigint * interval '1 millisecond'`;
// Locked when the failure happened: the row is written back unchanged (only an instance that
// has not seen the lock yet gets here), so that RETURNING still answers the lock.
const LOCKED = 'f.locked_until > EXCLUDED.window_start';
// Two counts, either of which locks (rate-limit.ts countFailure). The fixed window opened by the
// first failure after the last one ended (window_start, count), as the previous version keeps
// it, so instances of both versions count together during an upgrade. And the failures within
// the window before this one (the newest times kept, none from before a lock, whichever version
// set it): a sliding window, which the fixed one alone let a burst across its end through.
const FRESH = `(f.locked_until IS NOT NULL
  OR f.window_start <= EXCLUDED.window_start - $4::bigint * interval '1 millisecond')`;
const FIXED = `CASE WHEN ${FRESH} THEN 1 ELSE f.count + 1 END`;
const RECENT = `ARRAY(SELECT t FROM unnest(f.failures) AS t
  WHERE t > $2::bigint - $4::bigint
    AND (f.locked_until IS NULL OR t > extract(epoch FROM f.locked_until) * 1000)
  ORDER BY t DESC LIMIT ${MAX_FAILURE_TIMES})`;
const LOCKS = `(${FIXED} >= $3::bigint OR cardinality(${RECENT}) + 1 >= $3::bigint)`;
const RECORD_FAILURE = `
  INSERT INTO auth_failures AS f (client, window_start, count, locked_until, failures)
  VALUES ($1, ${AT}, 1, CASE WHEN 1 >= $3::bigint THEN ${AT} + ${LOCKOUT} END,
    CASE WHEN 1 >= $3::bigint THEN '{}'::bigint[] ELSE ARRAY[$2::bigint] END)
  ON CONFLICT (client) DO UPDATE SET
    window_start = CASE WHEN ${LOCKED} OR NOT ${FRESH} THEN f.window_start
      ELSE EXCLUDED.window_start END,
    count = CASE WHEN ${LOCKED} THEN f.count ELSE ${FIXED} END,
    locked_until = CASE WHEN ${LOCKED} THEN f.locked_until
      WHEN ${LOCKS} THEN EXCLUDED.window_start + ${LOCKOUT} END,
    failures = CASE WHEN ${LOCKED} THEN f.failures
      WHEN ${LOCKS} THEN '{}'::bigint[]
      WHEN $3::bigint - 1 > ${MAX_FAILURE_TIMES} THEN '{}'::bigint[]
      ELSE (ARRAY[$2::bigint] || ${RECENT})[1:($3::bigint - 1)::integer] END
  RETURNING extract(epoch FROM f.locked_until - ${AT})::float8 * 1000 AS locked_ms,
    f.locked_until = ${AT} + ${LOCKOUT} AS started`;
// The reads and the sweep run on the main pool, whose server-side statement timeout (30 s) is
// the queue's: each is sent after a SET LOCAL of its own in one query string (one transaction,
// one round trip; PostgreSQL 13 and later time each statement of it apart), so the values
// they take are whole numbers from the settings, written in.
function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`not a whole number: ${n}`);
  return String(n);
}

// The database's clock, and the addresses locked now (one row with a null client when none).
// Latest ends first, so the LIMIT keeps the newest locks, as the memory limiter's bound does.
const LOCKED_NOW = (maxClients: number) => `
  SELECT extract(epoch FROM now())::float8 * 1000 AS now_ms, locked.client, locked.until_ms
  FROM (SELECT 1) AS one LEFT JOIN LATERAL (
    SELECT client, extract(epoch FROM locked_until)::float8 * 1000 AS until_ms
    FROM auth_failures WHERE locked_until > now()
    ORDER BY locked_until DESC LIMIT ${int(maxClients)}) AS locked ON true`;

// Addresses with failures counted and no lock in force, whichever instance counted them: a
// success here resets those too (one every instance may have counted behind a balancer).
// Only rows whose failures may still count (a fixed window's start may be up to one window
// older than its last failure). At most `limit` = maxClients + 1, in no order: one
// more than the view keeps says that it cannot hold them all (counting-view.ts), whichever
// they are. (Read newest first, a flood of newer windows left a client's out, and which were
// newest hung on milliseconds that the clock offset estimates shift.)
const COUNTING_NOW = (limit: number, windowMs: number) => `
  SELECT client FROM auth_failures
  WHERE (locked_until IS NULL OR locked_until <= now())
    AND window_start > now() - 2 * ${int(windowMs)} * interval '1 millisecond'
  LIMIT ${int(limit)}`;
type LockedNow = { now_ms: number; client: string | null; until_ms: number | null };

// Never a lock in force: a correct credential must not lift it.
const RESET = `
  DELETE FROM auth_failures
  WHERE client = $1 AND (locked_until IS NULL OR locked_until <= now())`;

// SKIP LOCKED: instances sweeping at once split the rows instead of waiting on each other.
const SWEEP = (windowMs: number, limit: number) => `
  DELETE FROM auth_failures WHERE client IN (
    SELECT client FROM auth_failures
    WHERE window_start <= now() - ${int(windowMs)} * interval '1 millisecond'
      AND (locked_until IS NULL OR locked_until <= now())
      AND NOT EXISTS (SELECT 1 FROM unnest(failures) AS t
        WHERE t > extract(epoch FROM now()) * 1000 - ${int(windowMs)})
    LIMIT ${int(limit)} FOR UPDATE SKIP LOCKED)`;

/**
 * A limiter over the given pool, refreshing at once and then every `refreshMs` until closed.
 * `close` stops the loop (after the statement in flight); the pool stays the caller's.
 */
export function createPostgresLimiter(
  pool: pg.Pool,
  settings: RateLimitSettings,
  options: PostgresLimiterOptions = {},
): AuthFailureLimiter {
  const refreshMs = options.refreshMs ?? DEFAULT_REFRESH_MS;
  const sweepMs = options.sweepMs ?? DEFAULT_SWEEP_MS;
  const clock = options.clock ?? Date.now;
  const lockouts = options.lockouts ?? createLockouts(settings);
  const deadlineMs = options.statementDeadlineMs ?? STATEMENT_DEADLINE_MS;
  const reads = boundedStatements(pool, { deadlineMs, maxPending: MAX_PENDING_READS });
  const writes = boundedStatements(options.countsPool ?? pool, {
    deadlineMs,
    maxPending: options.maxPendingWrites ?? MAX_PENDING_WRITES,
  });
  const localTimeout = `SET LOCAL statement_timeout = ${int(serverTimeoutMs(deadlineMs))};`;
  /** One read (or sweep) ended on the server before this side gives up on it. */
  async function readQuery<R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>> {
    // Two statements: the answer is a result for each.
    const results = (await reads.query<R>({ text: `${localTimeout}${text}` })) as unknown as Array<
      pg.QueryResult<R>
    >;
    return results[1] as pg.QueryResult<R>;
  }
  // Addresses that may have a count: the only ones a success resets.
  const counting = createCountingView(settings.maxClients);
  // Resets sent and not answered yet, by address: while the view is crowded every success
  // resets, and one repeated meanwhile (a database holding the counts up) adds no write.
  const resetting = new Map<string, Promise<void>>();
  // Lock ends in this host's clock; all locks last lockoutSeconds, so insertion order is
  // about expiry order and the bound drops the lock that ends first. An ended lock stays a
  // while (see refresh) so that a read cannot bring it back.
  const locked = new Map<string, number>();
  const lockoutMs = settings.lockoutSeconds * 1000;

  function learnLock(client: string, untilMs: number): void {
    locked.delete(client);
    locked.set(client, untilMs);
    if (locked.size > settings.maxClients) locked.delete(locked.keys().next().value as string);
  }

  function lockedFor(client: string, nowMs: number): number {
    const until = locked.get(client);
    if (until === undefined || until <= nowMs) return 0;
    return Math.max(1, Math.ceil((until - nowMs) / 1000));
  }

  // The database's clock minus this host's, in whole milliseconds; unknown until a first read.
  let offsetMs: number | undefined;

  function observeClock(sentAt: number, receivedAt: number, databaseNowMs: number): void {
    const reading = Math.round(databaseNowMs - (sentAt + receivedAt) / 2);
    const slack = CLOCK_TOLERANCE_MS + (receivedAt - sentAt);
    if (offsetMs === undefined || Math.abs(reading - offsetMs) > slack) offsetMs = reading;
  }

  async function refresh(): Promise<void> {
    const sentAt = clock();
    const { rows } = await readQuery<LockedNow>(LOCKED_NOW(settings.maxClients));
    const receivedAt = clock();
    observeClock(sentAt, receivedAt, (rows[0] as LockedNow).now_ms);
    const offset = offsetMs as number;
    // Ended a lockout ago: no read can still return them (about in insertion order).
    for (const [client, until] of locked) {
      if (until > receivedAt - lockoutMs) break;
      locked.delete(client);
    }
    // Oldest end first, so the newest locks are the last the bound would drop.
    for (let i = rows.length - 1; i >= 0; i--) {
      const { client, until_ms } = rows[i] as LockedNow;
      if (client === null || until_ms === null) continue;
      const until = until_ms - offset;
      // A read never moves a known end earlier: a later end known here is this lock seen through
      // an offset that moved since, or a newer lock whose write was answered after the read was
      // taken. A later end read is learnt: this lock to its later end (as lockouts.ts keeps one
      // lock started twice), or a lock started elsewhere.
      if ((locked.get(client) ?? Number.NEGATIVE_INFINITY) >= until) continue;
      learnLock(client, until);
      counting.forget(client);
    }
    const mark = counting.mark();
    const counted = await readQuery<{ client: string }>(
      COUNTING_NOW(settings.maxClients + 1, settings.windowSeconds * 1000),
    );
    counting.read(
      mark,
      counted.rows.map((row) => row.client),
    );
  }

  // One read at a time: the loop's and the one a first failure waits for are the same.
  let reading: Promise<void> | undefined;
  function read(): Promise<void> {
    reading ??= refresh().finally(() => {
      reading = undefined;
    });
    return reading;
  }

  async function clockOffset(): Promise<number> {
    if (offsetMs === undefined) await read();
    return offsetMs as number;
  }

  async function sweep(): Promise<void> {
    for (let i = 0; i < SWEEP_BATCHES; i++) {
      const { rowCount } = await readQuery(SWEEP(settings.windowSeconds * 1000, SWEEP_BATCH));
      if ((rowCount ?? 0) < SWEEP_BATCH) return;
    }
  }

  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let lastSweep = clock();

  function tick(): void {
    running = (async () => {
      // A failed read keeps the view as it is; recordFailure reports the outage to the caller.
      await read().catch(() => undefined);
      if (clock() - lastSweep >= sweepMs) {
        lastSweep = clock();
        await sweep().catch(() => undefined);
      }
    })();
    void running.then(() => {
      running = undefined;
      if (closed) return;
      // The next read waits for this one: a slow database is never asked twice at once.
      timer = setTimeout(tick, refreshMs);
      timer.unref();
    });
  }
  tick();

  return {
    lockedFor,
    async recordFailure(client, nowMs) {
      // Refused before it could fail, but a caller may still count one: no write for it.
      if (lockedFor(client, nowMs) > 0) return;
      // A success after this failure sends a reset of its own, not one sent before it.
      resetting.delete(client);
      // The count's deadline starts now, its wait for the database's clock (the first read, when
      // unknown yet) included: it lands within the deadline of its failure or never.
      const count = clockOffset().then((offset) => ({
        name: 'hookgate_auth_record_failure',
        text: RECORD_FAILURE,
        values: [
          client,
          Math.round(nowMs) + offset,
          settings.maxFailures,
          settings.windowSeconds * 1000,
          lockoutMs,
        ],
      }));
      const { rows } = await writes.query<{ locked_ms: number | null; started: boolean | null }>(
        count,
      );
      const row = rows[0];
      if (row?.locked_ms == null || row.locked_ms <= 0) {
        counting.counted(client);
        return;
      }
      counting.forget(client);
      learnLock(client, nowMs + row.locked_ms);
      if (row.started) lockouts.started(client, nowMs + row.locked_ms);
    },
    hasFailures: (client) => counting.mayHave(client),
    reset(client) {
      counting.forget(client);
      const pending = resetting.get(client);
      if (pending) return pending;
      const write = writes
        .query({ name: 'hookgate_auth_reset', text: RESET, values: [client] })
        .then(() => undefined)
        .finally(() => {
          if (resetting.get(client) === write) resetting.delete(client);
        });
      resetting.set(client, write);
      return write;
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await Promise.all([running, reading?.catch(() => undefined)]);
    },
  };
}
