/**
 * The SQLite store's migrations: each entry moves a store file one schema
 * version up (PRAGMA user_version), from the base tables that schema.ts
 * creates. Entries are never edited once released; a change is a new entry.
 */

// The head of a session: its oldest unfinished action, with the time that action may run.
const HEAD_OF = (key: string) => `
  SELECT COALESCE(${key}, ''), seq, next_attempt_at_ms FROM actions
  WHERE session_key IS ${key} AND state IN ('queued', 'running') ORDER BY seq LIMIT 1`;

// Recompute one session's head (none when it has no unfinished work left).
const RECOMPUTE = (key: string) => `
  DELETE FROM session_heads WHERE lane = COALESCE(${key}, '');
  INSERT INTO session_heads (lane, head_seq, not_before_ms) ${HEAD_OF(key)};`;

/**
 * One row per session with unfinished work (queued or running): its oldest such action and when
 * that one may run (0: at once; later while it waits for a backoff). Wakes (no session key) had
 * the lane '' here until migration 5 (the worker reads them from the index). Triggers keep it exact in the same transaction as every
 * insert and change, whoever writes (the group writer, the runtime, the retry command). An
 * insert adds one index entry and a primary-key probe, plus a row for a session that had no
 * work: about 3-10 CPU µs on the group writer's insert (bench/claim-cost.ts).
 */
const SESSION_HEADS = `
CREATE INDEX IF NOT EXISTS actions_session_pending ON actions (session_key, seq)
  WHERE state IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS session_heads (
  lane TEXT PRIMARY KEY,
  head_seq INTEGER NOT NULL,
  not_before_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_heads_due ON session_heads (not_before_ms, head_seq);
DELETE FROM session_heads;
INSERT INTO session_heads (lane, head_seq, not_before_ms)
  SELECT COALESCE(a.session_key, ''), a.seq, a.next_attempt_at_ms FROM actions a
  WHERE a.seq IN (SELECT MIN(seq) FROM actions WHERE state IN ('queued', 'running')
                  GROUP BY COALESCE(session_key, ''));
-- A new action is its session's head only when the session had no unfinished work.
CREATE TRIGGER IF NOT EXISTS actions_head_insert AFTER INSERT ON actions
  WHEN NEW.state IN ('queued', 'running') BEGIN
  INSERT OR IGNORE INTO session_heads (lane, head_seq, not_before_ms)
    VALUES (COALESCE(NEW.session_key, ''), NEW.seq, NEW.next_attempt_at_ms);
END;
-- An action that ends hands the head to the next one of its session; one sent back to the
-- queue (the retry command) may become the head again.
CREATE TRIGGER IF NOT EXISTS actions_head_state AFTER UPDATE OF state ON actions
  WHEN (OLD.state IN ('queued', 'running')) <> (NEW.state IN ('queued', 'running')) BEGIN
  ${RECOMPUTE('NEW.session_key')}
END;
-- A head that waits for a backoff is skipped by the index until its time.
CREATE TRIGGER IF NOT EXISTS actions_head_backoff AFTER UPDATE OF next_attempt_at_ms ON actions
  WHEN NEW.next_attempt_at_ms <> OLD.next_attempt_at_ms BEGIN
  ${RECOMPUTE('NEW.session_key')}
END;
`;

// The session-head triggers for agent sessions (wakes have no head), since migration 5.
const HEAD_TRIGGERS = `
  CREATE TRIGGER actions_head_insert AFTER INSERT ON actions
    WHEN NEW.session_key IS NOT NULL AND NEW.state IN ('queued', 'running') BEGIN
    INSERT OR IGNORE INTO session_heads (lane, head_seq, not_before_ms)
      VALUES (NEW.session_key, NEW.seq, NEW.next_attempt_at_ms);
  END;
  CREATE TRIGGER actions_head_state AFTER UPDATE OF state ON actions
    WHEN NEW.session_key IS NOT NULL
      AND (OLD.state IN ('queued', 'running')) <> (NEW.state IN ('queued', 'running')) BEGIN
    ${RECOMPUTE('NEW.session_key')}
  END;
  CREATE TRIGGER actions_head_backoff AFTER UPDATE OF next_attempt_at_ms ON actions
    WHEN NEW.session_key IS NOT NULL AND NEW.next_attempt_at_ms <> OLD.next_attempt_at_ms BEGIN
    ${RECOMPUTE('NEW.session_key')}
  END;`;

/**
 * A session's place among the others (since migration 13): its head's `order_seq`, one past
 * the largest action seq when the session's turn last ended (a run of it ended or was sent
 * back to wait for a retry, or an ended one was retried), else the head's own seq; ties go to
 * the older head. The worker starts heads in that order, so a session that has just been
 * served goes behind every session with work waiting at that moment, and before any that
 * comes later: turns between sessions, not acceptance order.
 * Upserted rather than deleted and inserted: a head given back without a wait (a run the
 * worker's stop put back unstarted) keeps its place.
 */
const TURN_HEAD = (order: string) => `
  DELETE FROM session_heads WHERE lane = NEW.session_key AND NOT EXISTS (
    SELECT 1 FROM actions WHERE session_key = NEW.session_key AND state IN ('queued', 'running'));
  INSERT INTO session_heads (lane, head_seq, not_before_ms, order_seq)
    SELECT session_key, seq, next_attempt_at_ms, (SELECT MAX(seq) FROM actions) + 1 FROM actions
    WHERE session_key = NEW.session_key AND state IN ('queued', 'running') ORDER BY seq LIMIT 1
  ON CONFLICT (lane) DO UPDATE SET head_seq = excluded.head_seq,
    not_before_ms = excluded.not_before_ms, order_seq = ${order};`;

const TURN_TRIGGERS = `
  CREATE TRIGGER actions_head_insert AFTER INSERT ON actions
    WHEN NEW.session_key IS NOT NULL AND NEW.state IN ('queued', 'running') BEGIN
    INSERT OR IGNORE INTO session_heads (lane, head_seq, not_before_ms, order_seq)
      VALUES (NEW.session_key, NEW.seq, NEW.next_attempt_at_ms, NEW.seq);
  END;
  CREATE TRIGGER actions_head_state AFTER UPDATE OF state ON actions
    WHEN NEW.session_key IS NOT NULL
      AND (OLD.state IN ('queued', 'running')) <> (NEW.state IN ('queued', 'running')) BEGIN
    ${TURN_HEAD('excluded.order_seq')}
  END;
  CREATE TRIGGER actions_head_backoff AFTER UPDATE OF next_attempt_at_ms ON actions
    WHEN NEW.session_key IS NOT NULL AND NEW.next_attempt_at_ms <> OLD.next_attempt_at_ms BEGIN
    ${TURN_HEAD('CASE WHEN NEW.next_attempt_at_ms > 0 THEN excluded.order_seq ELSE session_heads.order_seq END')}
  END;`;

// Each entry moves the file one version up (PRAGMA user_version).
export const MIGRATIONS: readonly string[] = [
  // 1: the runtime: action lifecycle, main-session events, history, heartbeats, deliveries.
  `
  ALTER TABLE actions ADD COLUMN next_attempt_at_ms INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE actions ADD COLUMN started_at TEXT;
  ALTER TABLE actions ADD COLUMN finished_at TEXT;
  ALTER TABLE actions ADD COLUMN outcome TEXT;
  ALTER TABLE actions ADD COLUMN runner_pgid INTEGER;
  CREATE TABLE system_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    action_id TEXT,
    trusted INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    consumed_by TEXT
  );
  CREATE INDEX system_events_pending ON system_events (session_key, consumed_by, seq);
  CREATE TABLE session_turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_key TEXT NOT NULL,
    role TEXT NOT NULL,
    text TEXT NOT NULL,
    run_id TEXT,
    created_at TEXT NOT NULL
  );
  CREATE INDEX session_turns_key ON session_turns (session_key, seq);
  CREATE TABLE heartbeats (
    id TEXT PRIMARY KEY,
    reason TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    events INTEGER NOT NULL DEFAULT 0,
    reply TEXT,
    ack INTEGER,
    error TEXT
  );
  CREATE TABLE deliveries (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    source_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    recipient TEXT,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE control_requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    handled_at TEXT
  );
  `,
  // 2: delivery: the main session's last route, and delivery progress.
  `
  CREATE TABLE routes (
    session_key TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    recipient TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  ALTER TABLE deliveries ADD COLUMN parts INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE deliveries ADD COLUMN parts_sent INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE heartbeats ADD COLUMN runner_pgid INTEGER;
  `,
  // 3: history keyed by agent and session key, the heartbeat's turns apart from hook runs'.
  // Old rows: a run's turns belong to the agent its action names; a run without a record
  // belongs to nobody (''); heartbeat turns stay NULL until the runtime's start gives them
  // to the default agent (the only one that runs heartbeats).
  `
  ALTER TABLE session_turns ADD COLUMN agent_id TEXT;
  ALTER TABLE session_turns ADD COLUMN kind TEXT NOT NULL DEFAULT 'agent';
  UPDATE session_turns SET kind = 'heartbeat' WHERE run_id IN (SELECT id FROM heartbeats);
  UPDATE session_turns SET agent_id = coalesce(
    (SELECT json_extract(actions.action, '$.agentId') FROM actions WHERE actions.id = session_turns.run_id),
    '') WHERE kind = 'agent';
  DROP INDEX session_turns_key;
  CREATE INDEX session_turns_owner ON session_turns (agent_id, session_key, kind, seq);
  `,
  // 4: fair scheduling: the head (oldest unfinished action) of every session, kept by the
  // database itself, so the worker finds the oldest heads without reading any session's backlog.
  SESSION_HEADS,
  // 5: wakes (no session key) leave session_heads: the worker reads them from the session
  // index, never from a head, so keeping their lane cost every wake insert and end for nothing.
  `
  DROP TRIGGER actions_head_insert;
  DROP TRIGGER actions_head_state;
  DROP TRIGGER actions_head_backoff;
  DELETE FROM session_heads WHERE lane = '';
  ${HEAD_TRIGGERS}
  `,
  // 6: the mail-notification flow: each watched mailbox's cursor and watch, and each Pub/Sub
  // push received (keyed by its message id, so a redelivered push is one row) until its sync.
  `
  CREATE TABLE IF NOT EXISTS gmail_mailboxes (
    account TEXT PRIMARY KEY,
    cursor TEXT,
    watch_expiration_ms INTEGER,
    watched_at_ms INTEGER,
    last_push_at_ms INTEGER,
    last_sync_at_ms INTEGER,
    last_success_at_ms INTEGER,
    last_error TEXT,
    needs_consent INTEGER NOT NULL DEFAULT 0,
    refused_token_hash TEXT
  );
  CREATE TABLE IF NOT EXISTS gmail_pushes (
    message_id TEXT PRIMARY KEY,
    account TEXT NOT NULL,
    history_id TEXT NOT NULL,
    received_at_ms INTEGER NOT NULL,
    synced_at_ms INTEGER
  );
  CREATE INDEX IF NOT EXISTS gmail_pushes_pending ON gmail_pushes (account, synced_at_ms);
  `,
  // 7: a control request's answer (a reload's outcome, for `hookgate reload`).
  `
  CREATE TABLE IF NOT EXISTS control_answers (
    seq INTEGER PRIMARY KEY,
    result TEXT NOT NULL
  );
  `,
  // 8: a leaner actions table, cheaper to append to: the row id without AUTOINCREMENT (rows are
  // never deleted here, so seq still only grows, without a sqlite_sequence write per insert),
  // and instead of an index of every row by state, one of the rows that are not done (the
  // queue, the running and the failed: what the worker, the metrics and the CLI look up by
  // state). New action ids are time-ordered, so the id index grows at its end.
  `
  CREATE TABLE actions_lean (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    hook TEXT NOT NULL,
    session_key TEXT,
    state TEXT NOT NULL DEFAULT 'queued',
    attempts INTEGER NOT NULL DEFAULT 0,
    received_at TEXT NOT NULL,
    action TEXT NOT NULL,
    next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,
    started_at TEXT,
    finished_at TEXT,
    outcome TEXT,
    runner_pgid INTEGER
  );
  INSERT INTO actions_lean (seq, id, kind, hook, session_key, state, attempts, received_at, action,
    next_attempt_at_ms, started_at, finished_at, outcome, runner_pgid)
    SELECT seq, id, kind, hook, session_key, state, attempts, received_at, action,
      next_attempt_at_ms, started_at, finished_at, outcome, runner_pgid FROM actions;
  DROP TABLE actions;
  ALTER TABLE actions_lean RENAME TO actions;
  CREATE INDEX actions_session_pending ON actions (session_key, seq)
    WHERE state IN ('queued', 'running');
  CREATE INDEX actions_open ON actions (state, seq) WHERE state <> 'done';
  ${HEAD_TRIGGERS}
  `,
  // 9: a heartbeat consumes its events by recording the range it took (its events are always
  // the oldest pending ones of the session) instead of rewriting every event row and moving it
  // in the pending index. Rows consumed before keep their consumed_by.
  `
  CREATE TABLE IF NOT EXISTS event_consumption (
    session_key TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    heartbeat_id TEXT NOT NULL,
    PRIMARY KEY (session_key, last_seq)
  ) WITHOUT ROWID;
  `,
  // 10: a heartbeat reply's delivery kept in the store until it is over (it lived in memory, so
  // a restart during its retries lost it): a row per reply still to deliver, with when its next
  // attempt is due, when the attempt in flight was claimed or last kept its progress (NULL:
  // none), the claim's fencing number, the attempts that counted, the parts already sent and
  // where they went.
  `
  CREATE TABLE IF NOT EXISTS heartbeat_deliveries (
    heartbeat_id TEXT PRIMARY KEY,
    due_ms INTEGER NOT NULL,
    claimed_ms INTEGER,
    claim INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    parts_sent INTEGER NOT NULL DEFAULT 0,
    channel TEXT,
    recipient TEXT
  ) WITHOUT ROWID;
  `,
  // 11: no table changes. New rows keep an action without its wrapped prompt (rebuilt from its
  // text and wrapper when read, engine/store/stored-action.ts); a hookgate before this version
  // would take such an action for a trusted one, so the version makes it refuse the file.
  '-- actions without their wrapped prompt',
  // 12: no table changes. New untrusted events leave out their wrapper's notice (put back when
  // read, engine/store/stored-event.ts); a hookgate before this version would show them
  // without it, so the version makes it refuse the file.
  "-- events without their wrapper's notice",
  // 13: turns between sessions: each head's place (order_seq, TURN_HEAD above), in the index
  // the worker walks for due heads.
  `
  ALTER TABLE session_heads ADD COLUMN order_seq INTEGER NOT NULL DEFAULT 0;
  UPDATE session_heads SET order_seq = head_seq;
  DROP INDEX IF EXISTS session_heads_due;
  CREATE INDEX session_heads_due ON session_heads (not_before_ms, order_seq, head_seq);
  DROP TRIGGER IF EXISTS actions_head_insert;
  DROP TRIGGER IF EXISTS actions_head_state;
  DROP TRIGGER IF EXISTS actions_head_backoff;
  ${TURN_TRIGGERS}
  `,
  // 14: a requeued event's copy names the event it copies, so a second requeue finds it by
  // that alone (it was recognised by its content, which a later event of the same text, source
  // and action also had). Copies made before keep no such mark.
  `
  ALTER TABLE system_events ADD COLUMN copy_of INTEGER;
  CREATE INDEX system_events_copies ON system_events (copy_of) WHERE copy_of IS NOT NULL;
  `,
  // 15: a mailbox's failed watch kept apart from the last error, which the next good sync
  // cleared: `gmail status` showed a mailbox no watch covered as fine.
  'ALTER TABLE gmail_mailboxes ADD COLUMN watch_error TEXT;',
];
