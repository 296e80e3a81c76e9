/**
 * SQL over the operators' requests (control_requests, control_answers) that
 * both stores run as it is written: one text, so the two cannot read a
 * request differently.
 */

/** The newest taken request for a heartbeat, when it has no answer (the seq is its primary key). */
export const NEWEST_HEARTBEAT_REQUEST_UNSERVED = `SELECT r.seq FROM (SELECT seq FROM control_requests
    WHERE kind = 'heartbeat' AND handled_at IS NOT NULL ORDER BY seq DESC LIMIT 1) r
  WHERE NOT EXISTS (SELECT 1 FROM control_answers a WHERE a.seq = r.seq)`;
