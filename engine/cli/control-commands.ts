/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
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

/**
 * How long a heartbeat request waits to be taken: the pick-up, plus, on PostgreSQL, the time a
 * new leader may still take to come, which ends SUCCESSION_MS after the lead's lease runs out
 * (a leader that died keeps the lead until then, or one that stopped gave it up): the longer
 * ago it ran out, the less is left, down to nothing. No lease (SQLite; no instance ever led, or
 * an older hookgate deleted it when it stopped) adds nothing; one that could not be read
 * (`undefined`) adds the most a held one can: a lease and the grace. Pure.
 */
export function pickupWaitMs(lease: LeaderLease | undefined, leaseSeconds: number): number {
  const most = leaseSeconds * 1000 + SUCCESSION_MS;
  if (lease === undefined) return PICKUP_WAIT_MS + most;
  if (lease.kind === 'none') return PICKUP_WAIT_MS;
  const untilLapseMs = lease.kind === 'held' ? lease.leftMs : -lease.agoMs;
  return PICKUP_WAIT_MS + Math.min(most, Math.max(0, untilLapseMs + SUCCESSION_MS));
}

/** How a request for a heartbeat ended (askForHeartbeat). */
export type HeartbeatAsked =
  | { kind: 'taken' }
  | { kind: 'not-taken'; waitMs: number }
  /** Whether it was taken could not be read; it was taken back. */
  | { kind: 'unknown'; err: unknown }
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
  // Read before asking: a failed read leaves nothing asked.
  const lease = await store.leaderLease().catch(() => undefined);
  const waitMs = pickupWaitMs(lease, leaseSeconds);
  const seq = await store.request('heartbeat');
  let failed: { err: unknown } | undefined;
  const seen = await takenWithin(store, seq, waitMs).catch((err: unknown) => {
    failed = { err };
    return false;
  });
  if (seen) return { kind: 'taken' };
  let withdrawn: boolean;
  try {
    withdrawn = await store.withdrawRequest(seq);
  } catch (err) {
    return { kind: 'left', seq, err };
  }
  // Not withdrawn: a server took it meanwhile.
  if (!withdrawn) return { kind: 'taken' };
  return failed ? { kind: 'unknown', err: failed.err } : { kind: 'not-taken', waitMs };
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
    case 'unknown':
      process.stderr.write(
        `hookgate heartbeat: whether a server took the request could not be read (${errorText(asked.err)}); it was taken back\n`,
      );
      return 1;
    case 'left':
      process.stderr.write(
        `hookgate heartbeat: the request (${asked.seq}) was not seen taken and could not be taken back (${errorText(asked.err)}): a server started later may still run it\n`,
      );
      return 1;
  }
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
