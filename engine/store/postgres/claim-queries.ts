/**
 * The claim's queries on PostgreSQL: which actions may run now and how one
 * statement takes them under this instance's lease. A session's head is its
 * oldest unfinished action; one claim looks at the oldest unfinished actions
 * first (bounded cost) and at every session's head only when one backlog
 * fills that window.
 */
import { RUN_COLUMNS } from './run-rows.ts';

// The oldest unfinished actions one claim looks at first (bounded cost whatever the backlog).
export const WINDOW = 500;

/**
 * The heads (oldest unfinished action) of the sessions among the window of the oldest
 * unfinished actions. Cheap, and complete whenever the window holds every unfinished action.
 */
export const WINDOW_HEADS = `
  SELECT DISTINCT ON (session_key) seq, session_key, state, next_attempt_at, lease_until
  FROM (SELECT seq, session_key, state, next_attempt_at, lease_until FROM actions
        WHERE state IN ('queued', 'running') ORDER BY seq LIMIT ${WINDOW}) w
  WHERE session_key IS NOT NULL
  ORDER BY session_key, seq`;

/**
 * Every session's head, by a walk over the distinct session keys of the unfinished actions
 * (two index probes per session): for when one session's backlog fills the window, so another
 * session's work is never held back behind it.
 */
export const ALL_HEADS = `
  WITH RECURSIVE lanes(key) AS (
    (SELECT session_key FROM actions WHERE state IN ('queued', 'running') AND session_key IS NOT NULL
     ORDER BY session_key LIMIT 1)
    UNION ALL
    SELECT (SELECT session_key FROM actions
            WHERE state IN ('queued', 'running') AND session_key > lanes.key
            ORDER BY session_key LIMIT 1)
    FROM lanes WHERE lanes.key IS NOT NULL)
  SELECT h.* FROM lanes CROSS JOIN LATERAL (
    SELECT seq, session_key, state, next_attempt_at, lease_until FROM actions
    WHERE session_key = lanes.key AND state IN ('queued', 'running') ORDER BY seq LIMIT 1) h
  WHERE lanes.key IS NOT NULL`;

// Not heads at all: every unfinished action (for the claim-without-head-rule test fault).
export const EVERY_UNFINISHED = `
  SELECT seq, session_key, state, next_attempt_at, lease_until FROM actions
  WHERE state IN ('queued', 'running') AND session_key IS NOT NULL`;

/**
 * What may run now, outside the `busy` sessions ($3): a queued head that is due in a session
 * with no running action (a retried action older than the running one waits for it), and a
 * running action whose lease expired (its instance died). At most one per session.
 */
export const RUNNABLE_NOW = (heads: string, busy = '$3') => `
  SELECT a.seq FROM actions a
  WHERE a.seq IN (
      SELECT seq FROM (${heads}) h
        WHERE state = 'queued' AND next_attempt_at <= now() AND NOT (session_key = ANY(${busy}::text[]))
      UNION ALL
      SELECT seq FROM actions
        WHERE state = 'running' AND lease_until < now() AND session_key IS NOT NULL
          AND NOT (session_key = ANY(${busy}::text[])))
    AND ((a.state = 'queued' AND a.next_attempt_at <= now()
          AND NOT EXISTS (SELECT 1 FROM actions r
                          WHERE r.session_key = a.session_key AND r.state = 'running'))
      OR (a.state = 'running' AND a.lease_until < now()))`;

/**
 * Claim what may run now, oldest first. The conditions are checked again on each locked row: a
 * row another instance claimed meanwhile drops out, and one locked by it is skipped.
 */
export const CLAIM = (heads: string) => `
  WITH cand AS (
    ${RUNNABLE_NOW(heads)}
    ORDER BY a.seq LIMIT $4
    FOR UPDATE SKIP LOCKED)
  UPDATE actions SET state = 'running', attempts = attempts + 1, started_at = now(),
    lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond',
    runner_host = NULL, runner_pgid = NULL
  FROM cand WHERE actions.seq = cand.seq
  RETURNING ${RUN_COLUMNS.map((column) => `actions.${column}`).join(', ')}`;
