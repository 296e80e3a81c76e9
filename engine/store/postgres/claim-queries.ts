/**
 * The claim's queries on PostgreSQL: which actions may run now and how one
 * statement takes them under this instance's lease. A session's head is its
 * oldest unfinished action; heads are taken in turn order (a session whose
 * turn has just ended goes behind those that waited, session_places). One
 * claim looks at the oldest unfinished actions first (bounded cost) and at
 * every session's head only when one backlog fills that window.
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
 * A session's place in turn order: its head's seq, or one past the largest seq when its turn
 * last ended (session_places), whichever is later; ties go to the older head.
 */
const PLACE = 'greatest(a.seq, p.place)';

/**
 * What may run now, outside the `busy` sessions ($3): a queued head that is due in a session
 * with no running action (a retried action older than the running one waits for it), and a
 * running action whose lease expired (its instance died). At most one per session.
 */
export const RUNNABLE_NOW = (heads: string, busy = '$3', columns = 'a.seq') => `
  SELECT ${columns} FROM actions a LEFT JOIN session_places p ON p.session_key = a.session_key
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
 * Within the window, only heads placed no later than the window's last action: a session
 * beyond the window has its place after that (its head is later), so these come before it,
 * and the rest are taken from every session's head (ALL_HEADS) in one order.
 */
export const WITHIN_WINDOW = `AND ${PLACE} <= coalesce(
  (SELECT CASE WHEN count(*) >= ${WINDOW} THEN max(seq) END FROM (SELECT seq FROM actions
     WHERE state IN ('queued', 'running') ORDER BY seq LIMIT ${WINDOW}) w),
  ${PLACE})`;

/**
 * Claim what may run now, in turn order (`also`: a further condition on the candidates). The
 * conditions are checked again on each locked row: a row another instance claimed meanwhile
 * drops out, and one locked by it is skipped.
 */
export const CLAIM = (heads: string, also = '') => `
  WITH cand AS (
    ${RUNNABLE_NOW(heads, '$3', `a.seq, ${PLACE} AS place`)} ${also}
    ORDER BY ${PLACE}, a.seq LIMIT $4
    FOR UPDATE OF a SKIP LOCKED)
  UPDATE actions SET state = 'running', attempts = attempts + 1, started_at = now(),
    lease_owner = $1, lease_until = now() + $2 * interval '1 millisecond',
    runner_host = NULL, runner_pgid = NULL
  FROM cand WHERE actions.seq = cand.seq
  RETURNING ${RUN_COLUMNS.map((column) => `actions.${column}`).join(', ')}, cand.place`;

/**
 * Taken before END_TURN, to the end of the transaction: two writers ending turns of one session
 * at once (a run's end and a retry of another of its runs) would each read the session's work
 * without the other's change, and the one committing last could drop the place the other set.
 * Any fixed number for the class of these locks (two-key advisory locks never meet one-key ones).
 */
export const TURN_LOCK = `SELECT pg_advisory_xact_lock(${0x7475726e}, hashtext(session_key))
  FROM actions WHERE id = $1 AND session_key IS NOT NULL`;

/**
 * A session's turn has ended (its run ended or waits for a retry, or an ended one was sent
 * back): it takes its place after every action stored so far, while it has work left; a
 * session without work keeps no place (its next action's own seq is later anyway). $1: an
 * action of the session.
 */
export const END_TURN = `
  WITH s AS (SELECT session_key AS key, EXISTS (SELECT 1 FROM actions o
               WHERE o.session_key = x.session_key AND o.state IN ('queued', 'running')) AS open
             FROM actions x WHERE x.id = $1 AND x.session_key IS NOT NULL),
  gone AS (DELETE FROM session_places p USING s WHERE p.session_key = s.key AND NOT s.open)
  INSERT INTO session_places (session_key, place)
    SELECT key, (SELECT max(seq) FROM actions) + 1 FROM s WHERE open
  ON CONFLICT (session_key) DO UPDATE SET place = EXCLUDED.place`;
