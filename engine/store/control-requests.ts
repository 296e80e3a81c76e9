/**
 * SQL over the operators' requests (control_requests, control_answers) that
 * both stores run as it is written: one text, so the two cannot read a
 * request differently.
 */
import { configSchema } from '../../schemas/config.ts';

/**
 * The newest taken request for a heartbeat, when it has no answer and was taken since `cutoff`
 * (each store's expression for TAKEN_REQUEST_KEEP_MS ago: one taken before it is not run again,
 * whether or not a later take has pruned it yet). The seq is its primary key.
 */
export function newestHeartbeatRequestUnserved(cutoff: string): string {
  return `SELECT r.seq FROM (SELECT seq, handled_at FROM control_requests
    WHERE kind = 'heartbeat' AND handled_at IS NOT NULL ORDER BY seq DESC LIMIT 1) r
  WHERE r.handled_at >= ${cutoff} AND NOT EXISTS (SELECT 1 FROM control_answers a WHERE a.seq = r.seq)`;
}

// The longest lease any instance may hold (store.leaseSeconds' maximum).
const MAX_LEASE_MS = configSchema.properties.store.properties.leaseSeconds.maximum * 1000;

/**
 * How long a request nobody took is kept. Its asker (cli/server-request.ts) waits at most the
 * longest lease and seconds more for it to be taken, then takes it back; one still untaken past
 * this was left by an asker that was killed first (SIGKILL) or lost the store: a server started
 * later would do what nobody asks for any longer. It is dropped when requests are next taken.
 */
export const REQUEST_EXPIRY_MS = MAX_LEASE_MS + 5 * 60_000;

/**
 * How long a taken request and its answer are kept after it was taken. Its asker waits for the
 * answer a minute at most (`reload`), and a new leader resumes a heartbeat request its instance
 * took and never answered (newestHeartbeatRequestUnserved); a day on, nobody reads either,
 * and the scheduled heartbeats have run meanwhile. Dropped when requests are next taken, so each
 * command leaves no row for ever.
 */
export const TAKEN_REQUEST_KEEP_MS = 24 * 60 * 60_000;
