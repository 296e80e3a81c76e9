/**
 * Which system events a heartbeat consumed. A heartbeat takes the oldest
 * pending events of its session, so what it consumes is a range: the range
 * is recorded once (event_consumption) instead of rewriting every event row,
 * and an event is pending while it is above its session's last range and
 * was not marked one by one (rows consumed before the ranges existed, and
 * any set that is not the oldest pending ones, are marked in consumed_by).
 */
import type { SQLOutputValue, StatementSync } from 'node:sqlite';
import type { SystemEvent } from '../../runtime/runtime-store.ts';
import { restoredEventText } from '../stored-event.ts';
import { boundLimit } from './bound-limit.ts';

type Prepare = (sql: string) => StatementSync;

const EVENT_COLUMNS = 'seq, session_key, text, source, action_id, trusted, created_at';

/** An event from a row of PENDING_EVENTS or SESSION_EVENTS read as an array. */
export function eventOf(row: unknown): SystemEvent {
  const [seq, sessionKey, text, source, actionId, trusted, createdAt, consumedBy, setAside] =
    row as SQLOutputValue[];
  const isTrusted = Number(trusted) === 1;
  return {
    seq: Number(seq),
    sessionKey: sessionKey as string,
    text: restoredEventText(text as string, isTrusted),
    source: source as string,
    actionId: (actionId as string | null) ?? null,
    trusted: isTrusted,
    createdAt: createdAt as string,
    consumedBy: (consumedBy as string | null) ?? null,
    setAside: Number(setAside) === 1,
  };
}

// A session's pending events (?1 session key): not marked, and above the session's last range.
const PENDING = `session_key = ?1 AND consumed_by IS NULL
    AND seq > COALESCE((SELECT MAX(last_seq) FROM event_consumption WHERE session_key = ?1), 0)`;

/** The oldest pending events of a session (?1 session key, ?2 limit). */
export const PENDING_EVENTS = `SELECT ${EVENT_COLUMNS}, NULL AS consumed_by, 0 AS set_aside FROM system_events
  WHERE ${PENDING}
  ORDER BY seq ${boundLimit('?2')}`;

/**
 * The seq and UTF-8 size of the oldest pending events of a session (?1 session key, ?2 limit):
 * octet_length reads the size from the row's header, not the text.
 */
export const PENDING_SIZES = `SELECT seq, octet_length(text) FROM system_events
  WHERE ${PENDING}
  ORDER BY seq ${boundLimit('?2')}`;

/**
 * One page of a session's pending events, newest first below a seq (?1 session key, ?2 below,
 * ?3 page size): its lowest seq (NULL when the page is empty), its size, and whether one of its
 * events came from an action that asked for a heartbeat now. The stored action is JSON that
 * hookgate's code built (engine/actions.ts names every key, nested ones too) and JSON.stringify
 * wrote (every quote inside a string escaped), so the text `"mode":"now"` (a wake) or
 * `"wakeMode":"now"` (a run) in it is that field and nothing else. Matched as text, not parsed:
 * PostgreSQL's JSON types refuse the `\u0000` escape a payload can carry, and a failed read
 * would leave a lost heartbeat request to the schedule.
 */
export const PENDING_ASKED_NOW_PAGE = `SELECT MIN(p.seq) AS lowest, COUNT(*) AS size,
    COALESCE(MAX(instr(a.action, '"mode":"now"') > 0 OR instr(a.action, '"wakeMode":"now"') > 0), 0) AS asked
  FROM (SELECT seq, action_id FROM system_events WHERE ${PENDING} AND seq < ?2
        ORDER BY seq DESC ${boundLimit('?3')}) p
  LEFT JOIN actions a ON a.id = p.action_id`;

/** How many events of a session are pending (?1 session key). */
export const PENDING_COUNT = `SELECT count(*) AS n FROM system_events WHERE ${PENDING}`;

// The heartbeat that consumed event `e`: marked on the row, else the range holding it.
const CONSUMER = `COALESCE(e.consumed_by,
    (SELECT CASE WHEN c.first_seq <= e.seq THEN c.heartbeat_id END FROM event_consumption c
      WHERE c.session_key = e.session_key AND c.last_seq >= e.seq ORDER BY c.last_seq LIMIT 1))`;

/**
 * Events with the heartbeat that consumed each, and whether that heartbeat failed (it set the
 * event aside), over `FROM system_events e WHERE ...`.
 */
const WITH_CONSUMER = `SELECT ${EVENT_COLUMNS}, k.consumed_by,
    COALESCE((SELECT h.state = 'failed' FROM heartbeats h WHERE h.id = k.consumed_by), 0) AS set_aside
  FROM (SELECT ${EVENT_COLUMNS.split(', ')
    .map((column) => `e.${column}`)
    .join(', ')},
      ${CONSUMER} AS consumed_by FROM system_events e`;

/** A session's events, newest first, with the heartbeat that consumed each (?1 key, ?2 limit). */
export const SESSION_EVENTS = `${WITH_CONSUMER}
    WHERE e.session_key = ?1 ORDER BY e.seq DESC ${boundLimit('?2')}) k ORDER BY k.seq DESC`;

/** One event by its seq (?1), with the heartbeat that consumed it. */
export const EVENT_BY_SEQ = `${WITH_CONSUMER} WHERE e.seq = ?1) k`;

/** The copy of event ?1 a requeue made, if any. */
export const COPY_OF_EVENT = `SELECT seq FROM system_events WHERE copy_of = ?1 ORDER BY seq LIMIT 1`;

/** A copy of event ?1 appended as a new pending event (?2 the time), stored form kept. */
export const COPY_EVENT = `INSERT INTO system_events (session_key, text, source, action_id, trusted, created_at, copy_of)
  SELECT session_key, text, source, action_id, trusted, ?2, seq FROM system_events WHERE seq = ?1`;

const SESSION_OF = 'SELECT session_key FROM system_events WHERE seq = ?';
const LAST_CONSUMED =
  'SELECT COALESCE(MAX(last_seq), 0) AS last FROM event_consumption WHERE session_key = ?';
// How many pending events lie in the range, and how many of those the heartbeat listed: both
// equal to the list's length means the list is exactly the range's pending events.
const RANGE_COUNTS = `SELECT COUNT(*) AS pending, COALESCE(SUM(seq IN (SELECT value FROM json_each(?1))), 0) AS listed
  FROM system_events WHERE session_key = ?2 AND consumed_by IS NULL AND seq > ?3 AND seq <= ?4`;
const RECORD_RANGE =
  'INSERT INTO event_consumption (session_key, last_seq, first_seq, heartbeat_id) VALUES (?, ?, ?, ?)';
// Only events still pending: one inside a recorded range was consumed already.
const MARK_EACH = `UPDATE system_events SET consumed_by = ?1
  WHERE seq IN (SELECT value FROM json_each(?2)) AND consumed_by IS NULL
    AND seq > COALESCE((SELECT MAX(last_seq) FROM event_consumption c
      WHERE c.session_key = system_events.session_key), 0)`;

/** Mark `seqs` consumed by heartbeat `id` (inside the caller's transaction). */
export function consumeEvents(prepare: Prepare, id: string, seqs: readonly number[]): void {
  if (seqs.length === 0) return;
  const listed = JSON.stringify(seqs);
  if (!recordRange(prepare, id, seqs, listed)) prepare(MARK_EACH).run(id, listed);
}

function recordRange(
  prepare: Prepare,
  id: string,
  seqs: readonly number[],
  listed: string,
): boolean {
  if (new Set(seqs).size !== seqs.length) return false;
  const first = Math.min(...seqs);
  const last = Math.max(...seqs);
  const session = prepare(SESSION_OF).get(last) as { session_key: string } | undefined;
  if (!session) return false;
  const { last: consumed } = prepare(LAST_CONSUMED).get(session.session_key) as { last: number };
  if (first <= consumed) return false;
  const counts = prepare(RANGE_COUNTS).get(listed, session.session_key, consumed, last) as {
    pending: number;
    listed: number;
  };
  if (counts.pending !== seqs.length || counts.listed !== seqs.length) return false;
  prepare(RECORD_RANGE).run(session.session_key, last, first, id);
  return true;
}
