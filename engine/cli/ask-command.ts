/**
 * The command line's side of a request to the running server (`heartbeat now`, `reload`):
 * the store opened, the request asked and waited for (server-request.ts), signals and a store
 * that stops answering handled, what became of the request said.
 */
import { errorText } from '../observe/error-text.ts';
import type { RuntimeStore } from '../runtime/runtime-store.ts';
import { REQUEST_EXPIRY_MS } from '../store/control-requests.ts';
import type { ListFlags } from './list-actions.ts';
import { openStore } from './runtime-commands.ts';
import {
  askServer,
  bounded,
  CALL_LIMIT_MS,
  INTERRUPTED,
  onInterrupt,
  type ServerAsked,
  StoreTimeout,
} from './server-request.ts';

// The exit status of a command ended by a signal, as a shell reports it.
export const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };
// A repeat of a signal this soon is the same one delivered twice (Ctrl-C reaches both the
// launcher, which passes it on, and this process; so does a SIGTERM to the process group).
const SAME_SIGNAL_MS = 1_000;
// Closing the store's connections after the outcome is said: a database that stopped answering
// must not hold the command.
const CLOSE_LIMIT_MS = 2_000;

/** What a store error may say on the terminal: a timeout's own words, else errorText's. */
export function storeError(err: unknown): string {
  return err instanceof StoreTimeout ? err.message : errorText(err);
}

/** What a command does once the server took its request; its exit status. */
export type AfterTaken = (taken: {
  store: RuntimeStore;
  seq: number;
  /** Aborted when the command is interrupted. */
  signal: AbortSignal;
  /** The signal that interrupted it, if any. */
  interruptedBy(): string | undefined;
}) => Promise<number>;

/**
 * `hookgate <command>`: ask the running server for `kind` through the store and wait for it to
 * take the request (askServer), then `afterTaken`; a request nobody took is taken back and the
 * command exits 1, saying why.
 */
export async function askFromCommandLine(
  flags: ListFlags,
  command: string,
  kind: string,
  afterTaken: AfterTaken,
): Promise<number> {
  const name = `hookgate ${command}`;
  // Interrupted (from the moment the store is being opened), the command takes back whatever it
  // asked before it ends; interrupted again (later than the same signal's repeat), it ends at
  // once. The handlers stay until the store is closed and, once interrupted, until the repeat's
  // window is over: a repeat arriving then must not end it by the default action (exit 1
  // through the launcher).
  const interrupt = new AbortController();
  const interrupted = onInterrupt(interrupt.signal);
  let first: { name: string; atMs: number } | undefined;
  let said = false;
  let ended = false;
  const onSignal = (name: string) => {
    // After the end, only the first signal's repeat is still listened for, to be ignored.
    if (ended) return;
    if (first === undefined) {
      first = { name, atMs: Date.now() };
      interrupt.abort();
      return;
    }
    if (name === first.name && Date.now() - first.atMs < SAME_SIGNAL_MS) return;
    if (!said)
      process.stderr.write(
        `${name}: interrupted again: ended before its request was seen taken back\n`,
      );
    process.exit(SIGNAL_EXIT[name] ?? 1);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const opening = bounded(openStore(flags), CALL_LIMIT_MS, 'opening it');
    let opened: Awaited<typeof opening> | typeof INTERRUPTED;
    try {
      opened = await Promise.race([opening, interrupted]);
    } catch (err) {
      if (!(err instanceof StoreTimeout)) throw err;
      process.stderr.write(`${name}: ${err.message}; nothing was asked\n`);
      return 1;
    }
    if (opened === INTERRUPTED) {
      // A store that opens later is closed unused (the process ends first, as a rule).
      opening
        .then((late) => (typeof late === 'string' ? undefined : late.close()))
        .catch(() => undefined);
      process.stderr.write(`${name}: interrupted before asking; nothing was asked\n`);
      return SIGNAL_EXIT[first?.name ?? ''] ?? 1;
    }
    if (typeof opened === 'string') {
      process.stderr.write(`${name}: ${opened} No server has run on it.\n`);
      return 1;
    }
    try {
      const asked = await askServer(
        opened.store,
        kind,
        opened.at.store.leaseSeconds,
        interrupt.signal,
      );
      if (asked.kind !== 'taken') {
        const status = say(name, asked, opened.where, first?.name);
        said = true;
        return status;
      }
      const status = await afterTaken({
        store: opened.store,
        seq: asked.seq,
        signal: interrupt.signal,
        interruptedBy: () => first?.name,
      });
      said = true;
      return status;
    } finally {
      await bounded(opened.close(), CLOSE_LIMIT_MS, 'closing').catch(() => undefined);
    }
  } finally {
    const release = () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    };
    // The repeat of the signal that interrupted the command can still be on its way (the
    // launcher passes it on late on a loaded machine): without a handler it would end the
    // process by the default action before the status returned is its exit status. It is
    // ignored until the repeat's window closes; a command never interrupted lets go at once.
    if (first === undefined) release();
    else {
      ended = true;
      setTimeout(release, Math.max(0, first.atMs + SAME_SIGNAL_MS - Date.now())).unref();
    }
  }
}

/** A request not taken, on the terminal; the exit status. */
function say(
  name: string,
  asked: Exclude<ServerAsked, { kind: 'taken' }>,
  where: string,
  signal: string | undefined,
): number {
  switch (asked.kind) {
    case 'not-taken':
      process.stderr.write(
        `${name}: no server is running on ${where} (nothing took the request within ${Math.round(asked.waitMs / 1000)} s); start one with \`hookgate serve\`\n`,
      );
      return 1;
    case 'unchecked':
      process.stderr.write(
        `${name}: the store could not be read while waiting (${storeError(asked.err)}); no server took the request, and it was taken back\n`,
      );
      return 1;
    case 'interrupted':
      process.stderr.write(
        asked.asked
          ? `${name}: interrupted; the request was taken back\n`
          : `${name}: interrupted before asking; nothing was asked\n`,
      );
      return SIGNAL_EXIT[signal ?? ''] ?? 1;
    case 'left':
      process.stderr.write(
        `${name}: the request (${asked.seq}) was not seen taken and could not be taken back (${storeError(asked.err)}): a server started within ${REQUEST_EXPIRY_MS / 60_000} minutes of the asking may still run it (a later one drops it)\n`,
      );
      return 1;
  }
}
