/**
 * Operator commands that change the runtime's records: `heartbeat now`
 * (a request the running server picks up), `retry <action id>` and
 * `events requeue <seq>`.
 */
import { errorText } from '../observe/error-text.ts';
import type { Requeued } from '../runtime/runtime-store.ts';
import {
  askForHeartbeat,
  bounded,
  CALL_LIMIT_MS,
  type HeartbeatAsked,
  StoreTimeout,
} from './heartbeat-request.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';

// Taken is not run: a heartbeat already running takes it as one more, and without a runner a
// failed heartbeat is recorded at most once a minute.
const TAKEN =
  'The running server took the request and runs a heartbeat (see `hookgate heartbeats`; without a runner, a failed one is recorded at most once a minute).';

// The exit status of a command ended by a signal, as a shell reports it.
const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };
// A repeat of a signal this soon is the same one delivered twice (Ctrl-C reaches both the
// launcher, which passes it on, and this process; so does a SIGTERM to the process group).
const SAME_SIGNAL_MS = 1_000;
// Closing the store's connections after the outcome is said: a database that stopped answering
// must not hold the command.
const CLOSE_LIMIT_MS = 2_000;

/** What a store error may say on the terminal: a timeout's own words, else errorText's. */
function storeError(err: unknown): string {
  return err instanceof StoreTimeout ? err.message : errorText(err);
}

/** `heartbeat now`: ask the running server for an immediate heartbeat; exit 1 when none takes it. */
export async function heartbeatNow(flags: ListFlags, out: (line: string) => void): Promise<number> {
  // Interrupted (from the moment the store is being opened), the command takes back whatever it
  // asked before it ends; interrupted again (later than the same signal's repeat), it ends at
  // once. The handlers stay until the store is closed: a repeat arriving then must not end it by
  // the default action (exit 1 through the launcher).
  const interrupt = new AbortController();
  const interrupted = new Promise<'interrupted'>((resolve) =>
    interrupt.signal.addEventListener('abort', () => resolve('interrupted'), { once: true }),
  );
  let first: { name: string; atMs: number } | undefined;
  let said = false;
  const onSignal = (name: string) => {
    if (first === undefined) {
      first = { name, atMs: Date.now() };
      interrupt.abort();
      return;
    }
    if (name === first.name && Date.now() - first.atMs < SAME_SIGNAL_MS) return;
    if (!said)
      process.stderr.write(
        'hookgate heartbeat: interrupted again: ended before its request was seen taken back\n',
      );
    process.exit(SIGNAL_EXIT[name] ?? 1);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const opening = bounded(openStore(flags), CALL_LIMIT_MS, 'opening it');
    let opened: Awaited<typeof opening> | 'interrupted';
    try {
      opened = await Promise.race([opening, interrupted]);
    } catch (err) {
      if (!(err instanceof StoreTimeout)) throw err;
      process.stderr.write(`hookgate heartbeat: ${err.message}; nothing was asked\n`);
      return 1;
    }
    if (opened === 'interrupted') {
      // A store that opens later is closed unused (the process ends first, as a rule).
      opening
        .then((late) => (typeof late === 'string' ? undefined : late.close()))
        .catch(() => undefined);
      process.stderr.write('hookgate heartbeat: interrupted before asking; nothing was asked\n');
      return SIGNAL_EXIT[first?.name ?? ''] ?? 1;
    }
    if (typeof opened === 'string') {
      process.stderr.write(`hookgate heartbeat: ${opened} No server has run on it.\n`);
      return 1;
    }
    try {
      const asked = await askForHeartbeat(
        opened.store,
        opened.at.store.leaseSeconds,
        interrupt.signal,
      );
      const status = say(asked, opened.where, first?.name, out);
      said = true;
      return status;
    } finally {
      await bounded(opened.close(), CLOSE_LIMIT_MS, 'closing').catch(() => undefined);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The outcome on the terminal; the exit status. */
function say(
  asked: HeartbeatAsked,
  where: string,
  signal: string | undefined,
  out: (line: string) => void,
): number {
  switch (asked.kind) {
    case 'taken':
      out(TAKEN);
      return 0;
    case 'not-taken':
      process.stderr.write(
        `hookgate heartbeat: no server is running on ${where} (nothing took the request within ${Math.round(asked.waitMs / 1000)} s); start one with \`hookgate serve\`\n`,
      );
      return 1;
    case 'unchecked':
      process.stderr.write(
        `hookgate heartbeat: the store could not be read while waiting (${storeError(asked.err)}); no server took the request, and it was taken back\n`,
      );
      return 1;
    case 'interrupted':
      process.stderr.write(
        asked.asked
          ? 'hookgate heartbeat: interrupted; the request was taken back\n'
          : 'hookgate heartbeat: interrupted before asking; nothing was asked\n',
      );
      return SIGNAL_EXIT[signal ?? ''] ?? 1;
    case 'left':
      process.stderr.write(
        `hookgate heartbeat: the request (${asked.seq}) was not seen taken and could not be taken back (${storeError(asked.err)}): a server started later may still run it\n`,
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
