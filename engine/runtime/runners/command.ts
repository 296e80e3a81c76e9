/**
 * The `command` runner: runs argv (no shell) in the agent's workspace with a
 * bounded environment, writes the run as one JSON object to stdin, and takes
 * trimmed stdout as the reply. Exit 0 is success; anything else is an error
 * with the tail of stderr. The process gets its own process group, so a
 * timeout (or the next start after a crash) ends it and its children.
 */
import { spawn } from 'node:child_process';
import { type RunHooks, type RunRequest, type RunResult, type Runner, tail } from './runner.ts';

export type CommandRunnerOptions = {
  argv: readonly string[];
  cwd: string;
  env?: Readonly<Record<string, string>>;
};

const MAX_STDOUT = 1024 * 1024;
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

/** Create a command runner. */
export function createCommandRunner(options: CommandRunnerOptions): Runner {
  return {
    run(request: RunRequest, hooks: RunHooks = {}): Promise<RunResult> {
      return new Promise((resolve) => {
        const [file, ...args] = options.argv as [string, ...string[]];
        const child = spawn(file, args, {
          cwd: options.cwd,
          env: boundedEnv(options.env, request),
          detached: true,
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        let settled = false;
        const finish = (result: RunResult) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          hooks.signal?.removeEventListener('abort', onAbort);
          resolve(result);
        };
        const timer = setTimeout(() => {
          if (child.pid) killGroup(child.pid);
          finish({ status: 'timeout', reason: `no reply within ${request.timeoutSeconds}s` });
        }, request.timeoutSeconds * 1000);
        const onAbort = () => {
          if (child.pid) killGroup(child.pid);
          finish({ status: 'retry', reason: 'interrupted by shutdown' });
        };
        hooks.signal?.addEventListener('abort', onAbort, { once: true });
        // Could not start (missing or not executable): the work did not happen.
        child.on('error', (err) =>
          finish({ status: 'retry', reason: `cannot run ${file}: ${err.message}` }),
        );
        if (child.pid) hooks.onSpawn?.(child.pid);
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          if (stdout.length < MAX_STDOUT) stdout += chunk;
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr = (stderr + chunk).slice(-4096);
        });
        child.stdin.on('error', () => undefined);
        child.stdin.end(`${JSON.stringify(request)}\n`);
        child.on('close', (code, signal) => {
          if (code === 0) finish({ status: 'ok', reply: stdout.trim() });
          else
            finish({
              status: 'error',
              reason: `exit ${signal ?? code}${stderr ? `: ${tail(stderr)}` : ''}`,
            });
        });
      });
    },
  };
}
