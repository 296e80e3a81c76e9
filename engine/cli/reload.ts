/**
 * `hookgate reload`: ask the server running on this data directory to
 * reload its config file, and print the outcome (what changed nothing and
 * why, or which settings wait for a restart).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReloadOutcome } from '../reload/live-config.ts';
import { askFromCommandLine, SIGNAL_EXIT } from './ask-command.ts';
import type { ListFlags } from './list-actions.ts';
import { bounded, INTERRUPTED, onInterrupt } from './server-request.ts';
import { terminalText } from './terminal-text.ts';

// A reload starts transform processes, so its answer may take longer than the pick-up.
const ANSWER_WAIT_MS = 60_000;
const POLL_MS = 100;
const LOOK_LIMIT_MS = 2_000;

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
      const interrupted = onInterrupt(signal);
      const deadline = Date.now() + ANSWER_WAIT_MS;
      while (Date.now() < deadline) {
        const answer = await Promise.race([
          bounded(store.requestResult(seq), LOOK_LIMIT_MS, 'reading the outcome').catch(
            () => undefined,
          ),
          interrupted,
        ]);
        if (answer === INTERRUPTED) {
          process.stderr.write(
            'hookgate reload: interrupted; the server took the request and reloads (its log says how it went)\n',
          );
          return SIGNAL_EXIT[interruptedBy() ?? ''] ?? 1;
        }
        if (answer !== undefined) return report(JSON.parse(answer) as ReloadOutcome, out);
        if ((await Promise.race([sleep(POLL_MS), interrupted])) === INTERRUPTED) continue;
      }
      process.stderr.write(
        `hookgate reload: the server took the request but gave no outcome within ${ANSWER_WAIT_MS / 1000} s (see its log)\n`,
      );
      return 1;
    },
  );
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
