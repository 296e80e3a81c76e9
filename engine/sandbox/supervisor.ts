/**
 * The supervisor of the transform process: it forks transform-process.ts
 * (with --no-node-snapshot), loads the modules, bounds every call with its
 * own deadline, and kills and restarts the process when a call misses the
 * deadline or the process dies. The server keeps answering other requests
 * meanwhile; only calls in that process fail. Console lines from transforms
 * reach the service log with the mapping id, rate-limited.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { HookError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { FromSandbox, ModuleSpec, SandboxLimits, ToSandbox } from './protocol.ts';

export type SupervisorSettings = SandboxLimits & {
  /** The server's own bound on one call, process hop included. */
  deadlineMs: number;
  /** Console lines per mapping per minute that reach the log. */
  consoleLinesPerMinute: number;
};

/** What a transform returned: `undefined` when it returned undefined. */
export type TransformResult = { value: unknown };

export type TransformSupervisor = {
  /** Start the process and load the modules; resolves with load errors by module key. */
  start(): Promise<Map<string, string>>;
  /** Call a transform; throws HookError transform_failed / transform_timeout. */
  call(key: string, input: unknown): Promise<TransformResult>;
  /** Stop the process. */
  close(): Promise<void>;
};

type Pending = {
  key: string;
  resolve: (r: TransformResult) => void;
  reject: (e: HookError) => void;
  timer: NodeJS.Timeout;
  /** The process the call was sent to (undefined while waiting for one). */
  sentTo?: ChildProcess;
};

const PROCESS_FILE = new URL('./transform-process.ts', import.meta.url);
const LOAD_TIMEOUT_MS = 15_000;

/** Create the supervisor for a set of modules (nothing runs until start). */
export function createSupervisor(
  modules: readonly ModuleSpec[],
  settings: SupervisorSettings,
  logger: Logger,
): TransformSupervisor {
  const mappingOf = new Map(modules.map((m) => [m.key, m.mappingId]));
  const pending = new Map<number, Pending>();
  const budget = new Map<string, { windowStart: number; lines: number; suppressed: number }>();
  let child: ChildProcess | undefined;
  let ready: Promise<Map<string, string>> | undefined;
  let nextId = 1;
  let closed = false;
  const limits: SandboxLimits = {
    memoryLimitMb: settings.memoryLimitMb,
    cpuTimeoutMs: settings.cpuTimeoutMs,
    maxOutputBytes: settings.maxOutputBytes,
    recycleAfterCalls: settings.recycleAfterCalls,
    recycleAboveHeapMb: settings.recycleAboveHeapMb,
  };

  function spawnChild(): Promise<Map<string, string>> {
    const proc = fork(PROCESS_FILE, [], {
      execArgv: ['--no-node-snapshot', '--disable-warning=ExperimentalWarning'],
      serialization: 'json',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child = proc;
    const loaded = new Promise<Map<string, string>>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the transform process did not load in time')),
        LOAD_TIMEOUT_MS,
      );
      proc.on('message', (message: FromSandbox) => {
        if (message.type === 'loaded') {
          clearTimeout(timer);
          resolve(new Map(message.errors.map((e) => [e.key, e.message])));
        } else onMessage(message);
      });
      proc.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the transform process exited (${signal ?? code}) while loading`));
      });
    });
    proc.on('exit', (code, signal) => onExit(proc, code, signal));
    // A send to a process that is going away fails with EPIPE: its calls fail on exit instead.
    proc.on('error', (err) => logger.warn({ err: err.message }, 'transform process error'));
    const load: ToSandbox = { type: 'load', modules: [...modules], limits };
    proc.send(load);
    return loaded;
  }

  function onMessage(message: FromSandbox): void {
    if (message.type === 'log') {
      const mappingId = mappingOf.get(message.key);
      logger[message.level]({ mappingId, transform: true }, message.message);
      return;
    }
    if (message.type !== 'result') return;
    const call = pending.get(message.id);
    if (!call) return;
    pending.delete(message.id);
    clearTimeout(call.timer);
    logConsole(call.key, message.console, message.droppedLines);
    if (message.failure) {
      const mappingId = mappingOf.get(call.key);
      // The reason may quote payload data: only at debug level.
      logger.warn({ mappingId, kind: message.failure.kind }, 'transform failed');
      logger.debug({ mappingId, reason: message.failure.message }, 'transform failure reason');
      const code = message.failure.kind === 'timeout' ? 'transform_timeout' : 'transform_failed';
      call.reject(new HookError(code, failureMessage(mappingId, message.failure.kind)));
      return;
    }
    try {
      call.resolve({
        value: message.output === undefined ? undefined : JSON.parse(message.output),
      });
    } catch {
      call.reject(
        new HookError(
          'transform_invalid_output',
          `Transform of mapping "${mappingOf.get(call.key)}" returned invalid JSON.`,
        ),
      );
    }
  }

  /** console.* from a transform: to the log with the mapping id, at most N lines a minute per mapping. */
  function logConsole(
    key: string,
    lines: readonly { level: string; text: string }[],
    dropped: number,
  ): void {
    if (lines.length === 0 && dropped === 0) return;
    const mappingId = mappingOf.get(key);
    const now = Date.now();
    let state = budget.get(key);
    if (!state || now - state.windowStart >= 60_000) {
      if (state?.suppressed)
        logger.warn(
          { mappingId, suppressed: state.suppressed },
          'transform console lines suppressed',
        );
      state = { windowStart: now, lines: 0, suppressed: 0 };
      budget.set(key, state);
    }
    for (const line of lines) {
      if (state.lines >= settings.consoleLinesPerMinute) {
        state.suppressed++;
        continue;
      }
      state.lines++;
      const level =
        line.level === 'warn' || line.level === 'error' || line.level === 'debug'
          ? line.level
          : 'info';
      logger[level]({ mappingId, console: true }, line.text);
    }
    state.suppressed += dropped;
  }

  function onExit(proc: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    failCallsOf(proc);
    if (proc !== child || closed) return;
    logger.warn({ code, signal }, 'transform process stopped; restarting');
    restart();
  }

  /** Calls in flight in a process that is gone fail; calls waiting for the next one carry on. */
  function failCallsOf(proc: ChildProcess): void {
    for (const [id, call] of pending) {
      if (call.sentTo !== proc) continue;
      pending.delete(id);
      clearTimeout(call.timer);
      call.reject(
        new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'crash')),
      );
    }
  }

  /** Replace the process now: new calls go to the new one while the old one is killed. */
  function restart(): void {
    const old = child;
    child = undefined;
    if (old && old.exitCode === null && old.signalCode === null) old.kill('SIGKILL');
    if (closed) return;
    ready = spawnChild().catch((err: unknown) => {
      logger.error({ err: (err as Error).message }, 'transform process restart failed');
      ready = undefined;
      return new Map<string, string>();
    });
  }

  return {
    start() {
      ready ??= spawnChild();
      return ready;
    },
    async call(key, input) {
      if (closed) throw new HookError('transform_failed', 'The transform process is stopped.');
      ready ??= spawnChild();
      const id = nextId++;
      return new Promise<TransformResult>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          logger.warn(
            { mappingId: mappingOf.get(key), deadlineMs: settings.deadlineMs },
            'transform missed its deadline; restarting the transform process',
          );
          reject(new HookError('transform_timeout', failureMessage(mappingOf.get(key), 'timeout')));
          restart();
        }, settings.deadlineMs);
        pending.set(id, { key, resolve, reject, timer });
        const dispatch = () => {
          const call = pending.get(id);
          if (!call) return;
          const proc = child;
          if (!proc?.connected) {
            // Restarting: wait for the new process (the deadline still runs).
            ready ??= spawnChild();
            ready.then(dispatch, () => undefined);
            return;
          }
          call.sentTo = proc;
          const message: ToSandbox = { type: 'call', id, key, input: JSON.stringify(input) };
          proc.send(message);
        };
        (ready as Promise<unknown>).then(dispatch, () => undefined);
      });
    },
    async close() {
      closed = true;
      const proc = child;
      child = undefined;
      if (!proc || proc.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

function failureMessage(mappingId: string | undefined, kind: string): string {
  const who = `Transform of mapping "${mappingId ?? '?'}"`;
  if (kind === 'timeout') return `${who} did not finish in time.`;
  if (kind === 'memory') return `${who} ran out of memory.`;
  if (kind === 'crash') return `${who} failed: the transform process stopped.`;
  if (kind === 'output') return `${who} returned an output that is too large.`;
  return `${who} failed.`;
}
