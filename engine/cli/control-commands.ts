/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { configSchema } from '../../schemas/config.ts';
import { errorText } from '../observe/error-text.ts';
import type { LeaderLease, Requeued, RuntimeStore } from '../runtime/runtime-store.ts';
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

// A live instance checks for the lead every second: once a lease runs out, the next leader
// comes within a check or two; this grace also covers one whose checks are slowed down.
const SUCCESSION_MS = 5_000;
// The longest lease any instance may hold (store.leaseSeconds' maximum).
const MAX_LEASE_MS = configSchema.properties.store.properties.leaseSeconds.maximum * 1000;

/**
 * How long a heartbeat request waits to be taken: the pick-up, plus, where instances share the
 * store, the time a new leader may still take to come, which ends SUCCESSION_MS after the
 * lead's lease runs out (a leader that died keeps the lead until then; one that stopped gave it
 * up): the longer ago it ran out, the less is left, down to nothing. No lease row is read as one
 * that just ran out (an older hookgate deleted it at its stop). A lease read is taken as the
 * database has it (the instances' leaseSeconds may differ from this command's), up to the
 * longest any may hold; one that could not be read (`undefined`) waits as for a lease of this
 * command's leaseSeconds just renewed. Where one process owns the store, the pick-up only. Pure.
 */
export function pickupWaitMs(lease: LeaderLease | undefined, leaseSeconds: number): number {
  if (lease === undefined) return PICKUP_WAIT_MS + leaseSeconds * 1000 + SUCCESSION_MS;
  if (lease.kind === 'sole') return PICKUP_WAIT_MS;
  const untilLapseMs =
    lease.kind === 'held'
      ? Math.min(lease.leftMs, MAX_LEASE_MS)
      : lease.kind === 'lapsed'
        ? -lease.agoMs
        : 0;
  return PICKUP_WAIT_MS + Math.max(0, untilLapseMs + SUCCESSION_MS);
}

/** How a request for a heartbeat ended (askForHeartbeat). */
export type HeartbeatAsked =
  | { kind: 'taken' }
  | { kind: 'not-taken'; waitMs: number }
  /** Not taken (it was taken back), but the last looks failed: the store, not the servers. */
  | { kind: 'unchecked'; err: unknown }
  /** Not seen taken, and it could not be taken back: a server started later may run it. */
  | { kind: 'left'; seq: number; err: unknown };

/**
 * Ask for a heartbeat and wait for a server to take the request; one nobody took is taken back
 * (a server started later must not run a heartbeat nobody asks for any longer). A failure to
 * ask at all (nothing asked) is thrown.
 */
export async function askForHeartbeat(
  store: Pick<RuntimeStore, 'leaderLease' | 'request' | 'requestTaken' | 'withdrawRequest'>,
  leaseSeconds: number,
): Promise<HeartbeatAsked> {
  // Read before asking: a failed read asks nothing it would leave behind.
  const lease = await store.leaderLease().catch(() => undefined);
  const waitMs = pickupWaitMs(lease, leaseSeconds);
  // A failure to ask is thrown (if the database kept the request before its answer was lost,
  // it stays, as any request whose answer is lost: nothing here knows its number).
  const seq = await store.request('heartbeat');
  const seen = await takenWithin(store, seq, waitMs);
  if (seen.taken) return { kind: 'taken' };
  let withdrawn: boolean;
  try {
    withdrawn = await store.withdrawRequest(seq);
  } catch (err) {
    return { kind: 'left', seq, err };
  }
  // Not withdrawn: a server took it meanwhile.
  if (!withdrawn) return { kind: 'taken' };
  return 'failed' in seen ? { kind: 'unchecked', err: seen.failed } : { kind: 'not-taken', waitMs };
}

/** `heartbeat now`: ask the running server for an immediate heartbeat; exit 1 when none takes it. */
export async function heartbeatNow(flags: ListFlags, out: (line: string) => void): Promise<number> {
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate heartbeat: ${opened} No server has run on it.\n`);
    return 1;
  }
  let asked: HeartbeatAsked;
  try {
    asked = await askForHeartbeat(opened.store, opened.at.store.leaseSeconds);
  } finally {
    await opened.close();
  }
  switch (asked.kind) {
    case 'taken':
      out(TAKEN);
      return 0;
    case 'not-taken':
      process.stderr.write(
        `hookgate heartbeat: no server is running on ${opened.where} (nothing took the request within ${Math.round(asked.waitMs / 1000)} s); start one with \`hookgate serve\`\n`,
      );
      return 1;
    case 'unchecked':
      process.stderr.write(
        `hookgate heartbeat: the store could not be read while waiting (${errorText(asked.err)}); no server took the request, and it was taken back\n`,
      );
      return 1;
    case 'left':
      process.stderr.write(
        `hookgate heartbeat: the request (${asked.seq}) was not seen taken and could not be taken back (${errorText(asked.err)}): a server started later may still run it\n`,
      );
      return 1;
  }
}

/**
 * Whether the request was seen taken before the deadline. A failed look is looked again at the
 * next poll (a dropped connection must not cut the wait short while a server is about to take
 * it); `failed` is the error of the last look when none after it went through.
 */
async function takenWithin(
  store: Pick<RuntimeStore, 'requestTaken'>,
  seq: number,
  waitMs: number,
): Promise<{ taken: boolean; failed?: unknown }> {
  const deadline = Date.now() + waitMs;
  let failed: { err: unknown } | undefined;
  while (Date.now() < deadline) {
    try {
      if (await store.requestTaken(seq)) return { taken: true };
      failed = undefined;
    } catch (err) {
      failed = { err };
    }
    await sleep(PICKUP_POLL_MS);
  }
  return failed ? { taken: false, failed: failed.err } : { taken: false };
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
