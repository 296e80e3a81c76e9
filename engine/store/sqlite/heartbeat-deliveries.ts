/**
 * Heartbeat replies still to deliver (table heartbeat_deliveries): a row
 * per reply from the heartbeat's end until its delivery is over, with when
 * its next attempt is due, when the attempt in flight was claimed or last
 * kept its progress (its lease), a fencing number that only grows, the
 * attempts that counted and the parts already sent. Run inside the caller's
 * transaction.
 */
import type { SQLOutputValue, StatementSync } from 'node:sqlite';
import type {
  DeliveryPartsSent,
  HeartbeatDeliveryClaim,
  PendingHeartbeatDelivery,
} from '../../runtime/runtime-store.ts';
import { boundLimit } from './bound-limit.ts';

type Prepare = (sql: string) => StatementSync;

/** A finished heartbeat's reply, due at once (?: heartbeat id). */
export const QUEUE_DELIVERY =
  'INSERT INTO heartbeat_deliveries (heartbeat_id, due_ms) VALUES (?, 0)';

/**
 * After a crash (or a new leader): attempts in flight are nobody's, due again, but those of the
 * replies this instance is still delivering (?1, a JSON array of heartbeat ids).
 */
export const RECOVER_DELIVERIES = `UPDATE heartbeat_deliveries SET claimed_ms = NULL
  WHERE claimed_ms IS NOT NULL AND heartbeat_id NOT IN (SELECT value FROM json_each(?1))`;

const PENDING = `SELECT heartbeat_id, due_ms, claimed_ms FROM heartbeat_deliveries
  WHERE heartbeat_id > ? ORDER BY heartbeat_id ${boundLimit()}`;

// The next attempt: due, none in flight (or one taken for dead); its claim number fences the
// attempt's later writes.
const CLAIM = `UPDATE heartbeat_deliveries
  SET claimed_ms = ?1, claim = claim + 1, attempts = attempts + 1
  WHERE heartbeat_id = ?3 AND due_ms <= ?1 AND (claimed_ms IS NULL OR claimed_ms <= ?2)
  RETURNING claim, attempts, parts_sent, channel, recipient`;

// An attempt's own row: still claimed, and by this claim.
const THIS_CLAIM = 'heartbeat_id = ? AND claim = ? AND claimed_ms IS NOT NULL';

// Progress renews the attempt's lease: a long send stays its instance's while it goes on.
const SAVE = `UPDATE heartbeat_deliveries SET parts_sent = ?, claimed_ms = ?,
    channel = COALESCE(?, channel), recipient = COALESCE(?, recipient)
  WHERE ${THIS_CLAIM}`;

const RETRY = `UPDATE heartbeat_deliveries SET parts_sent = ?, claimed_ms = NULL,
    due_ms = ?, attempts = attempts - ?,
    channel = COALESCE(?, channel), recipient = COALESCE(?, recipient)
  WHERE ${THIS_CLAIM}`;

const END = `DELETE FROM heartbeat_deliveries WHERE ${THIS_CLAIM}`;

/** A page of the replies still to deliver, in the order of their heartbeat ids. */
export function pendingDeliveries(
  arrays: Prepare,
  limit: number,
  afterId: string,
): PendingHeartbeatDelivery[] {
  return (arrays(PENDING).all(afterId, limit) as unknown as SQLOutputValue[][]).map(
    ([id, due, claimed]) => ({
      id: id as string,
      dueAtMs: Number(due),
      claimedAtMs: claimed === null ? null : Number(claimed),
    }),
  );
}

/** Claim the next attempt with its reply, or undefined (not due, in flight, or over). */
export function claimDelivery(
  arrays: Prepare,
  id: string,
  nowMs: number,
  staleBeforeMs: number,
): HeartbeatDeliveryClaim | undefined {
  const row = arrays(CLAIM).get(nowMs, staleBeforeMs, id) as SQLOutputValue[] | undefined;
  if (!row) return undefined;
  const [claim, attempts, partsSent, channel, recipient] = row;
  const reply = arrays('SELECT reply FROM heartbeats WHERE id = ?').get(id) as
    | SQLOutputValue[]
    | undefined;
  return {
    id,
    reply: (reply?.[0] as string | null | undefined) ?? '',
    claim: Number(claim),
    attempts: Number(attempts),
    partsSent: Number(partsSent),
    target:
      channel === null || recipient === null
        ? null
        : { channel: channel as string, recipient: recipient as string },
  };
}

/** Keep an attempt's progress, or end it with the next attempt due at `retry.atMs`. */
export function saveDelivery(
  prepare: Prepare,
  claim: HeartbeatDeliveryClaim,
  { partsSent, target }: DeliveryPartsSent,
  retry?: { atMs: number; refund?: boolean },
): boolean {
  const channel = target?.channel ?? null;
  const recipient = target?.recipient ?? null;
  const { changes } = retry
    ? prepare(RETRY).run(
        partsSent,
        retry.atMs,
        retry.refund ? 1 : 0,
        channel,
        recipient,
        claim.id,
        claim.claim,
      )
    : prepare(SAVE).run(partsSent, Date.now(), channel, recipient, claim.id, claim.claim);
  return Number(changes) > 0;
}

/** End the delivery (its row goes), if the attempt is still this claim's. */
export function endDelivery(prepare: Prepare, claim: HeartbeatDeliveryClaim): boolean {
  return Number(prepare(END).run(claim.id, claim.claim).changes) > 0;
}
