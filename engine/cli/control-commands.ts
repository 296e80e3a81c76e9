/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import { errorText } from '../observe/error-text.ts';
import type { Requeued } from '../runtime/runtime-store.ts';
import { askForHeartbeat, type HeartbeatAsked } from './heartbeat-request.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';

// Taken is not run: a heartbeat already running takes it as one more, and without a runner a
// failed heartbeat is recorded at most once a minute.
const TAKEN =
  'The running server took the request and runs a heartbeat (see `hookgate heartbeats`; without a runner, a failed one is recorded at most once a minute).';

// The exit status of a command ended by a signal, as a shell reports it.
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

/** `heartbeat now`: ask the running server for an immediate heartbeat; exit 1 when none takes it. */
export async function heartbeatNow(flags: ListFlags, out: (line: string) => void): Promise<number> {
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate heartbeat: ${opened} No server has run on it.\n`);
    return 1;
  }
  // Interrupted while it waits, the command takes its request back before it ends.
  const interrupt = new AbortController();
  let signalled: string | undefined;
  const onSignal = (name: string) => {
    // A second signal is not waited on: the command ends at once, as it would have.
    if (signalled !== undefined) process.exit(SIGNAL_EXIT[name] ?? 1);
    signalled = name;
    interrupt.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let asked: HeartbeatAsked;
  try {
    asked = await askForHeartbeat(opened.store, opened.at.store.leaseSeconds, interrupt.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
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
    case 'interrupted':
      process.stderr.write('hookgate heartbeat: interrupted; the request was taken back\n');
      return SIGNAL_EXIT[signalled ?? ''] ?? 1;
    case 'left':
      process.stderr.write(
        `hookgate heartbeat: the request (${asked.seq}) was not seen taken and could not be taken back (${errorText(asked.err)}): a server started later may still run it\n`,
      );
      return 1;
  }
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
