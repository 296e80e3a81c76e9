/**
 * `hookgate reload`: ask the server running on this data directory to
 * reload its config file, and print the outcome (what changed nothing and
 * why, or which settings wait for a restart).
 */
import type { ReloadOutcome } from '../reload/live-config.ts';
import { askFromCommandLine, SIGNAL_EXIT, storeError } from './ask-command.ts';
import type { ListFlags } from './list-actions.ts';
import { onInterrupt, pollStore } from './server-request.ts';
import { terminalText } from './terminal-text.ts';

// A reload starts transform processes, so its answer may take longer than the pick-up.
const ANSWER_WAIT_MS = 60_000;
const TAKEN = 'the server took the request and reloads (its log says how it went)';

/**
 * The request goes to the server that takes operator requests (the leader, on PostgreSQL), as
 * `heartbeat now` does (ask-command.ts: the wait for it, interruptions, a store that stops
 * answering); once taken, the command waits for its outcome.
 */
export function reload(flags: ListFlags, out: (line: string) => void): Promise<number> {
  return askFromCommandLine(
    flags,
    'reload',
    'reload',
    async ({ store, seq, signal, interruptedBy }) => {
      const polled = await pollStore(
        () => store.requestResult(seq),
        'reading the outcome',
        ANSWER_WAIT_MS,
        onInterrupt(signal),
      );
      if (polled.kind === 'found') {
        const outcome = readOutcome(polled.value);
        if (outcome) return report(outcome, out);
        process.stderr.write(`hookgate reload: the server's answer could not be read; ${TAKEN}\n`);
        return 1;
      }
      if (polled.kind === 'interrupted') {
        process.stderr.write(`hookgate reload: interrupted; ${TAKEN}\n`);
        return SIGNAL_EXIT[interruptedBy() ?? ''] ?? 1;
      }
      process.stderr.write(
        polled.failed
          ? `hookgate reload: the store could not be read while waiting for the outcome (${storeError(polled.failed.err)}); ${TAKEN}\n`
          : `hookgate reload: the server took the request but gave no outcome within ${ANSWER_WAIT_MS / 1000} s (see its log)\n`,
      );
      return 1;
    },
  );
}

/** The stored outcome as the server wrote it; undefined for a row it could not have written. */
export function readOutcome(answer: string): ReloadOutcome | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer);
  } catch {
    return undefined;
  }
  const outcome = parsed as Partial<ReloadOutcome> | null;
  const strings = (value: unknown) =>
    Array.isArray(value) && value.every((item) => typeof item === 'string');
  const readable =
    typeof outcome?.ok === 'boolean' &&
    strings(outcome.restartNeeded) &&
    (outcome.warnings === undefined || strings(outcome.warnings)) &&
    (outcome.error === undefined || typeof outcome.error === 'string') &&
    (outcome.file === null || typeof outcome.file === 'string');
  return readable ? (outcome as ReloadOutcome) : undefined;
}

function report(outcome: ReloadOutcome, out: (line: string) => void): number {
  const file = outcome.file ?? '(no config file)';
  if (!outcome.ok) {
    // The reason names a path in a file the operator wrote: printed terminal-safe.
    process.stderr.write(
      `${terminalText(`hookgate reload: failed, the running configuration is unchanged: ${outcome.error ?? 'unknown'}`)}\n`,
    );
    return 1;
  }
  out(terminalText(`Reloaded ${file}.`));
  // Running, but what `check` refuses (a runner command missing): its runs would go dead.
  for (const warning of outcome.warnings ?? [])
    process.stderr.write(`${terminalText(`hookgate reload: warning: ${warning}`)}\n`);
  if (outcome.restartNeeded.length > 0) {
    out(`Changed, but wait for a restart: ${outcome.restartNeeded.join(', ')}`);
  }
  return 0;
}
