/**
 * `hookgate reload`: ask the server running on this data directory to
 * reload its config file, and print the outcome (what changed nothing and
 * why, or which settings wait for a restart).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReloadOutcome } from '../reload/live-config.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';
import { terminalText } from './terminal-text.ts';

// The server looks at once when the store's doorbell rings (every 500 ms where it polls); a
// reload starts transform processes, so its answer may take longer than the pick-up.
const PICKUP_WAIT_MS = 5_000;
const ANSWER_WAIT_MS = 60_000;
const POLL_MS = 100;

export async function reload(flags: ListFlags, out: (line: string) => void): Promise<number> {
  const opened = await openStore(flags);
  if (typeof opened === 'string') {
    process.stderr.write(`hookgate reload: ${opened} No server has run on it.\n`);
    return 1;
  }
  const { store } = opened;
  try {
    const seq = await store.request('reload');
    const pickup = Date.now() + PICKUP_WAIT_MS;
    while (!(await store.requestTaken(seq))) {
      if (Date.now() > pickup && (await store.withdrawRequest(seq))) {
        process.stderr.write(
          `hookgate reload: no server is running on ${opened.where} (nothing took the request within ${PICKUP_WAIT_MS / 1000} s)\n`,
        );
        return 1;
      }
      await sleep(POLL_MS);
    }
    const deadline = Date.now() + ANSWER_WAIT_MS;
    while (Date.now() < deadline) {
      const answer = await store.requestResult(seq);
      if (answer !== undefined) return report(JSON.parse(answer) as ReloadOutcome, out);
      await sleep(POLL_MS);
    }
    process.stderr.write(
      `hookgate reload: the server took the request but gave no outcome within ${ANSWER_WAIT_MS / 1000} s (see its log)\n`,
    );
    return 1;
  } finally {
    await opened.close();
  }
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
