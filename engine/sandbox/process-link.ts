/**
 * One transform process and its channel. Commands go out on the child's
 * stdin; answers come back on its fd 3 as capped frames, and each one is
 * checked (message-check.ts) before the owner sees it. There is no Node IPC
 * channel: the server parses nothing it did not ask for. Anything invalid
 * (too large, malformed, a log flood) kills the process (SIGKILL) and is
 * reported once; after that the link reads nothing more from it. stderr is
 * read and logged within a small budget; more of it a minute than an honest
 * process writes (only as it dies) is a flood, and kills the process too.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { Logger } from '../log.ts';
import { encodeFrame, FrameReader, turnWriter } from './frames.ts';
import { createLogBudget } from './log-budget.ts';
import { checkMessage } from './message-check.ts';
import type { FromSandbox, ToSandbox } from './protocol.ts';

export type LinkEvents = {
  /** A checked message from the process. */
  message(message: FromSandbox): void;
  /** The process sent something invalid; it is being killed. */
  refused(reason: string): void;
  /** The process is gone (after this, nothing more is reported). */
  exit(code: number | null, signal: NodeJS.Signals | null): void;
};

export type LinkOptions = {
  entry: string;
  execArgv: string[];
  maxFrameBytes: number;
  /** UTF-8 bytes of a call's output. */
  maxOutputBytes: number;
  maxModules: number;
  /** Process log messages ("reload failed", ...) allowed per minute before the process counts as flooding. */
  maxLogsPerMinute: number;
  /**
   * Reports of a compiled module allowed per minute: each makes the server read up to 64 files
   * (synchronously, contained) and hand their text to every process.
   */
  maxReportsPerMinute: number;
};

export type ProcessLink = {
  readonly pid: number | undefined;
  send(message: ToSandbox): void;
  /** A command already encoded (encodeFrame), as calls hold theirs. */
  sendFrame(frame: Buffer): void;
  /**
   * An `adopt` command: only the newest per module waits while an earlier one is still
   * unwritten (a process that reads its commands slowly, or never, is owed one version per
   * module, not every version since; the server holds no more for it).
   */
  adopt(message: Extract<ToSandbox, { type: 'adopt' }>): void;
  /** SIGKILL; `exit` follows when the process is really gone. */
  kill(): void;
};

const STDERR_CHUNKS_PER_MINUTE = 20;
/**
 * Bytes of stderr a process may write a minute. An honest one writes there only as it dies (a
 * fatal error and its stack: kilobytes); reading a flood as fast as the pipe gives it took most
 * of a core of the server.
 */
const STDERR_BYTES_PER_MINUTE = 1024 * 1024;
/** How long answers already in the pipe are still read after the process exited. */
const DRAIN_AFTER_EXIT_MS = 500;
const STDERR_CHARS = 1000;

/** A counter of messages per minute: true once one more is over `max` in the current minute. */
function perMinute(max: number): () => boolean {
  let window = { start: Date.now(), count: 0 };
  return () => {
    const now = Date.now();
    if (now - window.start >= 60_000) window = { start: now, count: 0 };
    return ++window.count > max;
  };
}

/** Spawn a transform process and wire its channel to `events`. */
export function spawnLink(options: LinkOptions, logger: Logger, events: LinkEvents): ProcessLink {
  const child: ChildProcess = spawn(process.execPath, [...options.execArgv, options.entry], {
    stdio: ['pipe', 'ignore', 'pipe', 'pipe'],
    env: childEnv(),
  });
  const reader = new FrameReader(options.maxFrameBytes);
  const answers = child.stdio[3] as Readable;
  let refused = false;
  const overLogBudget = perMinute(options.maxLogsPerMinute);
  const overReportBudget = perMinute(options.maxReportsPerMinute);

  const refuse = (reason: string): void => {
    if (refused) return;
    refused = true;
    answers.removeAllListeners('data');
    answers.destroy();
    child.kill('SIGKILL');
    guarded(logger, () => events.refused(reason));
  };
  const caps = { maxOutputBytes: options.maxOutputBytes, maxModules: options.maxModules };

  const onData = (chunk: Buffer): void => {
    const batch = reader.push(chunk);
    for (const text of batch.frames) {
      if (refused) return;
      const checked = checkMessage(text, caps);
      const problem = !checked.ok
        ? checked.reason
        : checked.message.type === 'log' && overLogBudget()
          ? 'log flood'
          : checked.message.type === 'compiled' && overReportBudget()
            ? 'report flood'
            : undefined;
      if (problem !== undefined || !checked.ok) {
        refuse(problem ?? 'invalid');
        return;
      }
      events.message(checked.message);
    }
    if (batch.error) refuse(batch.error);
  };
  // Nothing a process sends, nor a bug in handling it, may take the server down: a bad answer.
  answers.on('data', (chunk: Buffer) => {
    if (!guarded(logger, () => onData(chunk))) refuse('unhandled answer');
  });
  answers.on('error', () => undefined);
  let dead = false;
  let reported = false;
  let answersClosed = false;
  let exitStatus: [number | null, NodeJS.Signals | null] = [null, null];
  const report = (): void => {
    if (reported) return;
    reported = true;
    answers.destroy();
    guarded(logger, () => events.exit(...exitStatus));
  };
  // A process that closes its answer channel can no longer answer: end it. The channel also
  // closes as a process exits, and answers written just before may still be in the pipe.
  answers.on('close', () => {
    answersClosed = true;
    if (dead) report();
    else child.kill('SIGKILL');
  });
  child.stdin?.on('error', () => undefined);
  const write = child.stdin ? turnWriter(child.stdin) : undefined;
  watchStderr(child, logger, () => refuse('stderr flood'));
  const onGone = (code: number | null, signal: NodeJS.Signals | null): void => {
    if (dead) return;
    dead = true;
    exitStatus = [code, signal];
    // Read what the process wrote before it died (bounded: a descendant may hold the pipe open).
    if (answersClosed || refused) report();
    else setTimeout(report, DRAIN_AFTER_EXIT_MS).unref();
  };
  child.on('exit', onGone);
  // A process that could not be spawned at all never emits "exit".
  child.on('error', (err) => {
    logger.warn({ err: err.message }, 'transform process error');
    if (child.pid === undefined) onGone(null, null);
  });

  const sendFrame = (frame: Buffer): void => {
    if (dead || refused || !child.stdin?.writable) return;
    write?.(frame);
  };
  const pendingAdopts = new Map<string, ToSandbox>();
  let adoptUnwritten = false;
  const flushAdopts = (): void => {
    if (adoptUnwritten || dead || refused || !child.stdin?.writable) return;
    const next = pendingAdopts.entries().next();
    if (next.done) return;
    const [key, message] = next.value;
    pendingAdopts.delete(key);
    adoptUnwritten = true;
    // Called once the frame is in the pipe (or the stream failed): the next may follow.
    child.stdin.write(encodeFrame(message), () => {
      adoptUnwritten = false;
      flushAdopts();
    });
  };
  return {
    pid: child.pid,
    send: (message) => sendFrame(encodeFrame(message)),
    sendFrame,
    adopt(message) {
      pendingAdopts.delete(message.key);
      pendingAdopts.set(message.key, message);
      flushAdopts();
    },
    kill() {
      if (!dead) child.kill('SIGKILL');
    },
  };
}

/** Run an event handler; nothing it throws escapes into the event loop. False when it threw. */
function guarded(logger: Logger, handler: () => void): boolean {
  try {
    handler();
    return true;
  } catch (err) {
    logger.error({ err: (err as Error)?.message }, 'transform process event handling failed');
    return false;
  }
}

/** The server's environment holds secrets (tokens, keys): the process gets only what Node needs. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['NODE_OPTIONS', 'TZ', 'PATH']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/**
 * stderr of a transform process (isolated-vm's fatal messages): to the log, within a budget;
 * `onFlood` once it writes more than STDERR_BYTES_PER_MINUTE in a minute (nothing more is read).
 */
function watchStderr(child: ChildProcess, logger: Logger, onFlood: () => void): void {
  const budget = createLogBudget(STDERR_CHUNKS_PER_MINUTE, (_key, suppressed) =>
    logger.warn({ suppressed }, 'transform process stderr suppressed'),
  );
  let window = { start: Date.now(), bytes: 0 };
  const onData = (chunk: Buffer): void => {
    const now = Date.now();
    if (now - window.start >= 60_000) window = { start: now, bytes: 0 };
    window.bytes += chunk.length;
    if (window.bytes > STDERR_BYTES_PER_MINUTE) {
      child.stderr?.off('data', onData);
      child.stderr?.destroy();
      onFlood();
      return;
    }
    if (!budget.take('stderr', now)) return;
    logger.warn(
      {
        pid: child.pid,
        stderr: chunk
          .toString('utf8', 0, Math.min(chunk.length, STDERR_CHARS * 4))
          .slice(0, STDERR_CHARS),
      },
      'transform process stderr',
    );
  };
  child.stderr?.on('data', onData);
  child.stderr?.on('error', () => undefined);
}
