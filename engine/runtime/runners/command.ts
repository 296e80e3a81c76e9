/**
 * The `command` runner: runs argv (no shell) in the agent's workspace with a
 * bounded environment, writes the run as one JSON object to stdin, and takes
 * trimmed stdout as the reply. Exit 0 is success; anything else is an error
 * with the tail of stderr. The process gets its own process group, so a
 * timeout (or the next start after a crash) ends it and its children; a
 * watchdog in that group ends it if this process dies while it runs.
 * Output is bounded: stdout past `maxReplyBytes` ends the group and fails
 * the turn (final); only the last bytes of stderr are kept.
 */
import type { Readable } from 'node:stream';
import { answerEnd, guessedSecrets } from '../../outbound/answer-detail.ts';
import { type ByteCollector, collectBytes } from '../../byte-collector.ts';
import { longTimeout } from '../../long-timer.ts';
import { cannotExecute } from './executable.ts';
import {
  DEFAULT_MAX_REPLY_BYTES,
  type RunHooks,
  type RunRequest,
  type RunResult,
  type Runner,
  replyTooLarge,
  tail,
} from './runner.ts';
import { spawnWatched } from './watchdog.ts';

export type CommandRunnerOptions = {
  argv: readonly string[];
  cwd: string;
  env?: Readonly<Record<string, string>>;
  /** Most bytes of stdout read (`runtime.maxReplyBytes`); more ends the run as a final error. */
  maxReplyBytes?: number;
};

// Characters of stderr kept for the error reason (its end says what went wrong).
const STDERR_TAIL = 4096;
const PASSED_THROUGH = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

function boundedEnv(
  extra: Readonly<Record<string, string>> | undefined,
  request: RunRequest,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of PASSED_THROUGH)
    if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...env, ...extra, HOOKGATE_RUN_ID: request.runId, HOOKGATE_AGENT_ID: request.agentId };
}

/** Kill a whole process group, ignoring one that is already gone. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Collect a stream up to `maxBytes`; past it, stop reading, drop it all and call `onFlood` once. */
function boundedReader(stream: Readable, maxBytes: number, onFlood: () => void): () => string {
  let collected: ByteCollector | undefined = collectBytes(maxBytes);
  stream.on('data', (chunk: Buffer) => {
    if (!collected || collected.add(chunk)) return;
    collected = undefined;
    stream.destroy();
    onFlood();
  });
  return () => collected?.bytes().toString('utf8') ?? '';
}

/** Create a command runner. */
export function createCommandRunner(options: CommandRunnerOptions): Runner {
  return {
    async run(request: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      const argv = options.argv as readonly [string, ...string[]];
      const file = argv[0];
      const env = boundedEnv(options.env, request);
      // Missing or not executable: the work did not happen.
      const problem = await cannotExecute(file, options.cwd, env['PATH']);
      if (problem) return { status: 'retry', reason: `cannot run ${file}: ${problem}` };
      // An abort listener added now would never fire: nothing is started once shutdown began.
      if (hooks.signal?.aborted) return { status: 'retry', reason: 'interrupted by shutdown' };
      return new Promise((resolve) => {
        const child = spawnWatched(argv, { cwd: options.cwd, env }, settle);
        const maxBytes = options.maxReplyBytes ?? DEFAULT_MAX_REPLY_BYTES;
        let stderr = '';
        // Whether stderr outgrew what is kept, so its start may be the end of a cut secret.
        let stderrCut = false;
        let settled = false;
        const finish = (result: RunResult) => {
          if (settled) return;
          settled = true;
          timer.clear();
          hooks.signal?.removeEventListener('abort', onAbort);
          resolve(result);
        };
        // In steps: a run allowed longer than a Node timer waits was timed out at once.
        const timer = longTimeout(() => {
          if (child.pid) killGroup(child.pid);
          finish({ status: 'timeout', reason: `no reply within ${request.timeoutSeconds}s` });
        }, request.timeoutSeconds * 1000);
        const onAbort = () => {
          // A runner that has exited ran its turn: its end (read within the watchdog's grace)
          // is the outcome. Ending it as interrupted would run an answered turn again.
          if (child.exitCode !== null || child.signalCode !== null) return;
          if (child.pid) killGroup(child.pid);
          finish({ status: 'retry', reason: 'interrupted by shutdown' });
        };
        hooks.signal?.addEventListener('abort', onAbort, { once: true });
        // Could not start: the work did not happen.
        child.on('error', (err) =>
          finish({ status: 'retry', reason: `cannot run ${file}: ${err.message}` }),
        );
        if (child.pid) hooks.onSpawn?.(child.pid);
        const reply = boundedReader(child.stdout, maxBytes, () => {
          // A flood: reading stopped; end the group. The turn ran, so this is final.
          if (child.pid) killGroup(child.pid);
          finish(replyTooLarge(maxBytes));
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          const all = stderr + chunk;
          stderrCut ||= all.length > STDERR_TAIL;
          stderr = all.slice(-STDERR_TAIL);
        });
        child.stdin.on('error', () => undefined);
        child.stdin.end(`${JSON.stringify(request)}\n`);

        /** The runner has exited and its output is all read. */
        function settle(code: number | null, signal: NodeJS.Signals | null): void {
          if (code === 0) finish({ status: 'ok', reply: reply().trim() });
          else {
            // A runner that fails often prints its settings: its env values that may be
            // credentials are blanked (the cut start, where half of one could stand, dropped).
            const secrets = guessedSecrets(Object.values(options.env ?? {}));
            const said = stderr ? tail(answerEnd(stderr, secrets, stderrCut)) : '';
            finish({ status: 'error', reason: `exit ${signal ?? code}${said ? `: ${said}` : ''}` });
          }
        }
      });
    },
  };
}
