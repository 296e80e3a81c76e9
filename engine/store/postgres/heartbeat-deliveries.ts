/**
 * Heartbeat replies still to deliver on PostgreSQL (table
 * heartbeat_deliveries), as in the SQLite store: a row per reply from the
 * heartbeat's end until its delivery is over, with its due time, its lease
 * (when the attempt in flight was claimed or last kept its progress, by the
 * instances' clocks), a fencing number that only grows, the attempts that
 * counted and the parts already sent.
 */
import type pg from 'pg';
import type {
  DeliveryPartsSent,
  HeartbeatDeliveryClaim,
  PendingHeartbeatDelivery,
} from '../../runtime/runtime-store.ts';

type Db = pg.Pool | pg.PoolClient;

/** A finished heartbeat's reply, due at once ($1 heartbeat id). */
export const QUEUE_DELIVERY =
  'INSERT INTO heartbeat_deliveries (heartbeat_id, due_ms) VALUES ($1, 0)';

/** For a new leader: attempts in flight were the previous leader's, due again (but those in `$1`: this instance is still making them). */
export const RECOVER_DELIVERIES = `UPDATE heartbeat_deliveries SET claimed_ms = NULL
  WHERE claimed_ms IS NOT NULL AND NOT (heartbeat_id = ANY($1::text[]))`;

// An attempt's own row ($1 id, $2 claim): still claimed, and by this claim.
const THIS_CLAIM = 'heartbeat_id = $1 AND claim = $2 AND claimed_ms IS NOT NULL';

/** A page of the replies still to deliver, in the order of their heartbeat ids. */
export async function pendingDeliveries(
  db: Db,
  limit: number,
  afterId: string,
): Promise<PendingHeartbeatDelivery[]> {
  const { rows } = await db.query<{
    heartbeat_id: string;
    due_ms: string;
    claimed_ms: string | null;
  }>(
    `SELECT heartbeat_id, due_ms, claimed_ms FROM heartbeat_deliveries
     WHERE heartbeat_id > $1 ORDER BY heartbeat_id LIMIT $2`,
    [afterId, limit],
  );
  return rows.map((row) => ({
    id: row.heartbeat_id,
    dueAtMs: Number(row.due_ms),
    claimedAtMs: row.claimed_ms === null ? null : Number(row.claimed_ms),
  }));
}

/**
 * Claim the next attempt with its reply: due, none in flight (or one taken for dead); its claim
 * number fences the attempt's later writes. Undefined: not due, in flight, or over.
 */
export async function claimDelivery(
  db: Db,
  id: string,
  nowMs: number,
  staleBeforeMs: number,
): Promise<HeartbeatDeliveryClaim | undefined> {
  const { rows } = await db.query<{
    reply: string | null;
    claim: number;
    attempts: number;
    parts_sent: number;
    channel: string | null;
    recipient: string | null;
  }>(
    `UPDATE heartbeat_deliveries d SET claimed_ms = $2, claim = d.claim + 1,
       attempts = d.attempts + 1
     FROM heartbeats h
     WHERE d.heartbeat_id = $1 AND h.id = d.heartbeat_id AND d.due_ms <= $2
       AND (d.claimed_ms IS NULL OR d.claimed_ms <= $3)
     RETURNING h.reply, d.claim, d.attempts, d.parts_sent, d.channel, d.recipient`,
    [id, nowMs, staleBeforeMs],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    id,
    reply: row.reply ?? '',
    claim: row.claim,
    attempts: row.attempts,
    partsSent: row.parts_sent,
    target:
      row.channel === null || row.recipient === null
        ? null
        : { channel: row.channel, recipient: row.recipient },
  };
}

/** Keep an attempt's progress (its lease renewed), or end it with the next attempt due at `retry.atMs`. */
export async function saveDelivery(
  db: Db,
  claim: HeartbeatDeliveryClaim,
  { partsSent, target }: DeliveryPartsSent,
  retry?: { atMs: number; refund?: boolean },
): Promise<boolean> {
  const channel = target?.channel ?? null;
  const recipient = target?.recipient ?? null;
  const { rowCount } = retry
    ? await db.query(
        `UPDATE heartbeat_deliveries SET parts_sent = $3, claimed_ms = NULL, due_ms = $4,
           attempts = attempts - $5, channel = COALESCE($6, channel),
           recipient = COALESCE($7, recipient)
         WHERE ${THIS_CLAIM}`,
        [claim.id, claim.claim, partsSent, retry.atMs, retry.refund ? 1 : 0, channel, recipient],
      )
    : await db.query(
        `UPDATE heartbeat_deliveries SET parts_sent = $3, claimed_ms = $4,
           channel = COALESCE($5, channel), recipient = COALESCE($6, recipient)
         WHERE ${THIS_CLAIM}`,
        [claim.id, claim.claim, partsSent, Date.now(), channel, recipient],
      );
  return (rowCount ?? 0) > 0;
}

/** End the delivery (its row goes), if the attempt is still this claim's. */
export async function endDelivery(db: Db, claim: HeartbeatDeliveryClaim): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM heartbeat_deliveries WHERE ${THIS_CLAIM}`, [
    claim.id,
    claim.claim,
  ]);
  return (rowCount ?? 0) > 0;
}
