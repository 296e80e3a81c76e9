/**
 * Starts a command runner so that its process group ends when the hookgate
 * that started it dies, even by SIGKILL: otherwise the runner of a killed
 * instance keeps running beside the retry of the same turn on another one.
 *
 * The group leader is `/bin/sh`, which puts a watchdog in the background and
 * then execs the runner, so the runner keeps the leader's pid (the recorded
 * pgid), its exit code or signal, stdio, cwd and environment. The watchdog
 * is a `read` on fd 3, one end of a socket pair whose other end only
 * hookgate holds (close-on-exec, so no other child inherits it). EOF without
 * a line means hookgate is gone: the watchdog kills its own group (`kill 0`).
 * Once the runner has exited and its output is closed (or read for a grace
 * after its exit, where a leftover holds it open), hookgate writes a line and
 * the watchdog leaves quietly, so leftovers outlive the run as they always
 * did.
 *
 * Why this shape (POSIX `sh` builtins only; no dependency, no native addon):
 * - `sh`: two forks and an exec more per run, a small fraction of what a
 *   `node` watchdog would cost (~40 ms and tens of MB per run).
 * - not `setpriv --pdeathsig KILL`: the death signal reaches only the direct
 *   child, not the runner's own children, and fires when the parent *thread*
 *   that forked it ends, not the process.
 * - The watchdog is forked twice, so it is not the runner's child: a runner
 *   that waits for all its children (or counts them) never sees it. It stays
 *   in the group, so the group exists while it watches and `kill 0` cannot
 *   hit a reused pgid.
 * - The runner gets no fd 3 (`3<&-`), and `sh` would export PWD: it is put
 *   back as the bounded environment has it.
 * - The watchdog ignores HUP, INT, QUIT and TERM from its start (the leader
 *   ignores them while it forks it): a runner that ends its group politely
 *   (`trap 'kill 0' EXIT`), even at once, does not end the watch.
 * Not covered: a runner that leaves the group (`setsid`), or a watchdog
 * killed on its own; then only the embedded store's next start ends the recorded group.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';

// $1 is '' (no PWD in the environment) or '=<value>'; the runner's argv follows.
// The polite signals are ignored before the watchdog is forked, so it has them ignored from its
// first instant: a runner that signals its group at once cannot end it before its own trap ran.
// The runner gets them back (`trap -`) before its exec.
const LEADER = [
  "trap '' HUP INT QUIT TERM",
  '( (read -r _ <&3 || kill -s KILL 0) & ) </dev/null >/dev/null 2>&1',
  'trap - HUP INT QUIT TERM',
  "case $1 in '') unset PWD ;; *) PWD=${1#=}; export PWD ;; esac",
  'shift',
  'exec "$@" 3<&-',
].join('\n');

/**
 * How long the runner's output may stay open after it exited before hookgate stops reading it:
 * ample for the pipes to be read dry (the runner's last write is in them by its exit).
 */
const OUTPUT_GRACE_MS = 1_000;

export type WatchedOptions = { cwd: string; env: NodeJS.ProcessEnv };

/**
 * Called once the runner has exited and its output is closed, or read for OUTPUT_GRACE_MS after
 * its exit (Node's 'close' also waits for the watchdog).
 */
export type OnEnded = (code: number | null, signal: NodeJS.Signals | null) => void;

/**
 * Spawn argv in a new process group whose watchdog kills the group if this
 * process dies before the runner has exited and closed its output.
 */
export function spawnWatched(
  argv: readonly [string, ...string[]],
  options: WatchedOptions,
  onEnded: OnEnded,
): ChildProcessByStdio<Writable, Readable, Readable> {
  const pwd = options.env['PWD'];
  const child = spawn(
    '/bin/sh',
    ['-c', LEADER, 'hookgate-runner', pwd === undefined ? '' : `=${pwd}`, ...argv],
    {
      cwd: options.cwd,
      env: options.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    },
  );
  const lifeline = child.stdio[3];
  // Read to the end (EOF closes it), and never throw on a watchdog that is already gone.
  if (lifeline instanceof Socket) lifeline.on('error', () => undefined).resume();
  let open = 3;
  let exit: [number | null, NodeJS.Signals | null] = [null, null];
  const ended = () => {
    open -= 1;
    if (open > 0) return;
    if (lifeline instanceof Socket) lifeline.end('\n');
    onEnded(...exit);
  };
  child.once('exit', (code, signal) => {
    exit = [code, signal];
    ended();
    if (open === 0) return;
    // A leftover of the runner (a daemon it started, a `sleep &`) may hold its stdout or stderr
    // open for good: waiting for their end ran an answered turn into its timeout. What the
    // runner wrote is in the pipe by its exit and read within the grace; then hookgate lets go
    // of its ends and the leftover lives on, as one that let go of the output does.
    const grace = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
    }, OUTPUT_GRACE_MS);
    grace.unref();
    const cleared = () => {
      if (open === 0) clearTimeout(grace);
    };
    child.stdout?.once('close', cleared);
    child.stderr?.once('close', cleared);
  });
  child.stdout!.once('close', ended);
  child.stderr!.once('close', ended);
  return child as ChildProcessByStdio<Writable, Readable, Readable>;
}
