/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LeaderLease, Requeued } from '../runtime/runtime-store.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';

// The server looks at once when the store's doorbell rings (every 500 ms where it polls); a
// loaded machine gets ample slack.
const PICKUP_WAIT_MS = 5_000;
const PICKUP_POLL_MS = 100;
// Taken is not run: a heartbeat already running takes it as one more, and without a runner a
// failed heartbeat is recorded at most once a minute.
const TAKEN =
  'The running server took the request and runs a heartbeat (see `hookgate heartbeats`; without a runner, a failed one is recorded at most once a minute).';

/**
 * How long a heartbeat request waits to be taken on PostgreSQL: the pick-up, plus the time a
 * leader may still take to come. A lease held (its leader maybe dead) runs out in its time, and
 * the next instance then leads at its next check. One given up or run out within the last
 * lease, or none to be read (an older hookgate gave it up by deleting it; no instance with a
 * runtime ever led; `undefined`: the read failed), may have a successor on its way: a whole
 * lease. Only a lease run out longer ago than that means no instance is there to lead: none
 * took it over in all that time. Pure.
 */
export function pickupWaitMs(lease: LeaderLease | undefined, leaseSeconds: number): number {
  const leaseMs = leaseSeconds * 1000;
  if (lease?.kind === 'held') return PICKUP_WAIT_MS + Math.min(lease.leftMs, leaseMs);
  if (lease?.kind === 'lapsed' && lease.agoMs >= leaseMs) return PICKUP_WAIT_MS;
  return PICKUP_WAIT_MS + leaseMs;
}

/** `heartbeat now`: ask the running server for an immediate heartbeat; exit 1 when none takes it. */
export async function heartbeatNow(flags: ListFlags, out: (line: string) => void): Promise<number> {
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate heartbeat: ${opened} No server has run on it.\n`);
    return 1;
  }
  const { store } = opened;
  const at = opened.at.store;
  // Read before asking: nothing is asked that a failed read would leave behind.
  const lease =
    at.kind === 'postgres' ? await store.leaderLease().catch(() => undefined) : undefined;
  const waitMs = at.kind === 'postgres' ? pickupWaitMs(lease, at.leaseSeconds) : PICKUP_WAIT_MS;
  try {
    const seq = await store.request('heartbeat');
    try {
      if (await takenWithin(store, seq, waitMs)) {
        out(TAKEN);
        return 0;
      }
    } catch (err) {
      // Not known to be taken: taken back, so that a server started later does not act on it.
      await store.withdrawRequest(seq).catch(() => undefined);
      throw err;
    }
    // Withdrawn, so that a server started later does not run a heartbeat nobody asked it for.
    if (!(await store.withdrawRequest(seq))) {
      out(TAKEN);
      return 0;
    }
  } finally {
    await opened.close();
  }
  process.stderr.write(
    `hookgate heartbeat: no server is running on ${opened.where} (nothing took the request within ${Math.round(waitMs / 1000)} s); start one with \`hookgate serve\`\n`,
  );
  return 1;
}

async function takenWithin(
  store: { requestTaken(seq: number): Promise<boolean> },
  seq: number,
  waitMs: number,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline) {
    if (await store.requestTaken(seq)) return true;
    await sleep(PICKUP_POLL_MS);
  }
  return false;
}

/** `retry <action id> [--failed]`: a dead (or failed) action back to the queue with fresh attempts. */
export async function retry(
  flags: ListFlags & { id: string; failed?: boolean },
  out: (line: string) => void,
): Promise<number> {
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate retry: ${opened}\n`);
    return 1;
  }
  const { store } = opened;
  try {
    const run = await store.run(flags.id);
    if (!run) {
      process.stderr.write(`hookgate retry: no action ${flags.id}\n`);
      return 1;
    }
    if (!(await store.retryDead(flags.id, { failed: flags.failed ?? false }))) {
      const hint = run.state === 'failed' ? ' (add --failed to run a failed action again)' : '';
      const allowed = flags.failed ? 'dead or failed' : 'dead';
      process.stderr.write(
        `hookgate retry: action ${flags.id} is ${run.state}, not ${allowed}${hint}\n`,
      );
      return 1;
    }
  } finally {
    await opened.close();
  }
  out(`Action ${flags.id} is queued again.`);
  return 0;
}

/** `events requeue <seq>`: a set-aside event offered again, as a new pending copy. */
export async function requeueEvent(
  flags: ListFlags & { seq: string },
  out: (line: string) => void,
): Promise<number> {
  const seq = /^[1-9][0-9]{0,15}$/.test(flags.seq) ? Number(flags.seq) : undefined;
  if (seq === undefined) {
    process.stderr.write(
      'hookgate events requeue: the event is named by its number (`hookgate events` shows it)\n',
    );
    return 2;
  }
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate events requeue: ${opened}\n`);
    return 1;
  }
  let result: Requeued;
  try {
    result = await opened.store.requeueEvent(seq);
  } finally {
    await opened.close();
  }
  if ('seq' in result) {
    out(
      `Event ${seq} is pending again as event ${result.seq}: the next heartbeat takes it (\`hookgate heartbeat now\` asks for one).`,
    );
    return 0;
  }
  const why =
    result.refused === 'unknown'
      ? 'there is no such event'
      : result.refused === 'requeued'
        ? `it was offered again already, as event ${result.copy}`
        : result.consumedBy === null
          ? 'it is still pending'
          : `it was consumed by heartbeat ${result.consumedBy}, which did not set it aside`;
  process.stderr.write(`hookgate events requeue: event ${seq}: ${why}\n`);
  return 1;
}
