/**
 * The PostgreSQL store's schema: the same data as the SQLite store's tables
 * after all their migrations, plus what several instances sharing one queue
 * need (leases, the host a runner runs on). hookgate creates and migrates it
 * at start; instances starting at once take turns on an advisory lock.
 *
 * Types: times the database compares (leases, backoff, retention) are
 * timestamptz, read against the database's clock; an action and its outcome
 * are text holding JSON, as in SQLite: the runtime only reads them back
 * whole, and jsonb would refuse a text with a NUL escape (\u0000) that SQLite
 * stores, so a request SQLite accepts would fail here.
 */
import type pg from 'pg';
import { inTransaction } from './pool.ts';

// Per-table autovacuum for rows updated several times each (queued, running, done): vacuum and
// analyse after 2% changes instead of 20%, so dead versions and stale plans never pile up.
const HOT_TABLE = `autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02,
  autovacuum_vacuum_insert_scale_factor = 0.02`;

// Each entry moves the database one version up (recorded in schema_version).
const MIGRATIONS: readonly string[] = [
  // 1: everything the SQLite store holds (its migrations 1-7 but the mail flow's tables and the
  // session_heads table, which only SQLite's scheduler reads), plus leases for a leader.
  `
  CREATE TABLE actions (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL UNIQUE,
    kind text NOT NULL,
    hook text NOT NULL,
    -- NULL for wakes, as in SQLite: they run on the main session's event lane.
    session_key text,
    state text NOT NULL DEFAULT 'queued'
      CHECK (state IN ('queued', 'running', 'done', 'failed', 'dead')),
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
    -- The instance running it and until when; an expired lease may be claimed by another.
    lease_owner text,
    lease_until timestamptz,
    -- A runner's process group exists on one host only: only that host may kill it.
    runner_host text,
    runner_pgid integer,
    received_at timestamptz NOT NULL,
    started_at timestamptz,
    finished_at timestamptz,
    outcome text,
    action text NOT NULL
  ) WITH (fillfactor = 80, ${HOT_TABLE});
  CREATE INDEX actions_unfinished ON actions (seq) WHERE state IN ('queued', 'running');
  -- At most one running action per session, whichever instance claims it.
  CREATE UNIQUE INDEX actions_one_running ON actions (session_key)
    WHERE state = 'running' AND session_key IS NOT NULL;
  CREATE INDEX actions_state ON actions (state, seq);
  CREATE INDEX actions_session_pending ON actions (session_key, seq)
    WHERE state IN ('queued', 'running');

  CREATE TABLE idempotency_keys (
    key text PRIMARY KEY,
    fingerprint text NOT NULL,
    action_id text NOT NULL,
    response text NOT NULL,
    created_at_ms bigint NOT NULL
  ) WITH (${HOT_TABLE});
  CREATE INDEX idempotency_created ON idempotency_keys (created_at_ms);

  -- Lost on a crash by design (no WAL): failed-auth counts are cheap to forget, costly to log.
  CREATE UNLOGGED TABLE auth_failures (
    client text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    count integer NOT NULL,
    locked_until timestamptz
  );

  CREATE TABLE system_events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_key text NOT NULL,
    text text NOT NULL,
    source text NOT NULL,
    action_id text,
    trusted boolean NOT NULL,
    created_at timestamptz NOT NULL,
    consumed_by text
  );
  CREATE INDEX system_events_pending ON system_events (session_key, consumed_by, seq);

  CREATE TABLE session_turns (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id text,
    session_key text NOT NULL,
    kind text NOT NULL DEFAULT 'agent',
    role text NOT NULL,
    text text NOT NULL,
    run_id text,
    created_at timestamptz NOT NULL
  );
  CREATE INDEX session_turns_owner ON session_turns (agent_id, session_key, kind, seq);

  CREATE TABLE heartbeats (
    id text PRIMARY KEY,
    reason text NOT NULL,
    state text NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    events integer NOT NULL DEFAULT 0,
    reply text,
    ack boolean,
    error text,
    runner_host text,
    runner_pgid integer
  );

  CREATE TABLE deliveries (
    id text PRIMARY KEY,
    source text NOT NULL,
    source_id text NOT NULL,
    channel text NOT NULL,
    recipient text,
    text text NOT NULL,
    state text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    error text,
    parts integer NOT NULL DEFAULT 0,
    parts_sent integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  );

  CREATE TABLE routes (
    session_key text PRIMARY KEY,
    channel text NOT NULL,
    recipient text NOT NULL,
    updated_at timestamptz NOT NULL
  );

  CREATE TABLE control_requests (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind text NOT NULL,
    created_at timestamptz NOT NULL,
    handled_at timestamptz
  );
  CREATE TABLE control_answers (
    seq bigint PRIMARY KEY,
    result text NOT NULL
  );

  -- A named lease (the heartbeat leader): held by owner until then, by the database's clock.
  CREATE TABLE leases (
    name text PRIMARY KEY,
    owner text NOT NULL,
    until timestamptz NOT NULL
  );
  `,
  // 2: the shared failed-auth limiter reads the addresses locked now every second: only locked
  // rows enter this index, so counting a failure that locks nothing never writes to it.
  `
  CREATE INDEX auth_failures_locked ON auth_failures (locked_until) WHERE locked_until IS NOT NULL;
  `,
  // 3: a heartbeat reply's delivery kept in the store until it is over (it lived in memory, so
  // a restart or a new leader lost it during its retries): a row per reply still to deliver,
  // with when its next attempt is due, when the attempt in flight was claimed or last kept its
  // progress (NULL: none), the claim's fencing number, the attempts that counted, the parts
  // already sent and where they went.
  `
  CREATE TABLE heartbeat_deliveries (
    heartbeat_id text PRIMARY KEY,
    due_ms bigint NOT NULL,
    claimed_ms bigint,
    claim integer NOT NULL DEFAULT 0,
    attempts integer NOT NULL DEFAULT 0,
    parts_sent integer NOT NULL DEFAULT 0,
    channel text,
    recipient text
  );
  `,
  // 4: turns between sessions: a session whose turn has ended takes its place after the
  // actions stored by then (claim-queries.ts); one row per session with work left.
  `
  CREATE TABLE session_places (
    session_key text PRIMARY KEY,
    place bigint NOT NULL
  ) WITH (${HOT_TABLE});
  `,
  // 5: a requeued event's copy names the event it copies (SQLite's migration 14).
  `
  ALTER TABLE system_events ADD COLUMN copy_of bigint;
  CREATE INDEX system_events_copies ON system_events (copy_of) WHERE copy_of IS NOT NULL;
  `,
  // 6: the failed-auth limit counts in a sliding window: each address keeps the times (epoch ms,
  // the database's clock) of its failures that still count, at most maxFailures - 1.
  `
  ALTER TABLE auth_failures ADD COLUMN failures bigint[] NOT NULL DEFAULT '{}';
  `,
];

/** The schema version this hookgate writes. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.length;

// Any fixed number, the same in every instance: the advisory lock that serialises migrations.
const MIGRATION_LOCK = 0x686f6f6b; // 'hook'

/** The version the database is at, or undefined when hookgate has never created its tables. */
export async function postgresSchemaVersion(pool: pg.Pool): Promise<number | undefined> {
  const { rows: found } = await pool.query<{ exists: boolean }>(
    "SELECT to_regclass('schema_version') IS NOT NULL AS exists",
  );
  if (!found[0]?.exists) return undefined;
  const { rows } = await pool.query<{ version: number }>('SELECT version FROM schema_version');
  return rows[0]?.version;
}

/** A database a newer hookgate migrated: rows of its shape this one would misread or damage. */
function tooNew(found: number): Error {
  return new Error(
    `the PostgreSQL database is at schema version ${found}; this hookgate reads version ${MIGRATIONS.length} (use the hookgate that serves it)`,
  );
}

/**
 * Create or migrate the schema to the current version in one transaction. Instances starting
 * at once wait for each other on a transaction-scoped advisory lock, so each migration runs
 * once. A database already at a newer version (a newer instance migrated it) is refused, as
 * the SQLite store's file is: instances of this version already running go on, a new start of
 * one does not. Returns the version the database is at.
 */
export async function migratePostgres(pool: pg.Pool): Promise<number> {
  // Already current (the usual start): read only, so a role that may no longer create tables
  // starts, and no instance waits on the lock.
  const current = await postgresSchemaVersion(pool);
  if (current !== undefined && current > MIGRATIONS.length) throw tooNew(current);
  if (current === MIGRATIONS.length) return current;
  return inTransaction(pool, async (client) => {
    // A migration may rewrite a big table: the pool's statement timeout is for queue work.
    await client.query("SET LOCAL statement_timeout = '10min'");
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_version (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      version integer NOT NULL
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_version');
    const from = rows[0]?.version ?? 0;
    if (from > MIGRATIONS.length) throw tooNew(from);
    for (let next = from; next < MIGRATIONS.length; next++) {
      await client.query(MIGRATIONS[next] as string);
    }
    if (from < MIGRATIONS.length) {
      await client.query(
        `INSERT INTO schema_version (one, version) VALUES (true, $1)
         ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version`,
        [MIGRATIONS.length],
      );
    }
    return MIGRATIONS.length;
  });
}
