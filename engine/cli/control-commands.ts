/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import type { Requeued } from '../runtime/runtime-store.ts';
import { askFromCommandLine } from './ask-command.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';

// Taken is not run: a heartbeat already running takes it as one more, and without a runner a
// failed heartbeat is recorded at most once a minute.
const TAKEN =
  'The running server took the request and runs a heartbeat (see `hookgate heartbeats`; without a runner, a failed one is recorded at most once a minute).';

/** `heartbeat now`: ask the running server for an immediate heartbeat; exit 1 when none takes it. */
export function heartbeatNow(flags: ListFlags, out: (line: string) => void): Promise<number> {
  return askFromCommandLine(flags, 'heartbeat', 'heartbeat', async () => {
    out(TAKEN);
    return 0;
  });
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
