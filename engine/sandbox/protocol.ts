/**
 * Messages between the server and its transform processes, and the caps
 * both sides hold them to. Each message is one length-prefixed JSON frame
 * (frames.ts): commands on the child's stdin, answers on its fd 3. The
 * server checks every answer (message-check.ts) before using it.
 */
import { headUnits } from '../text-cut.ts';

/** A transform module to load: `key` names it in calls. */
export type ModuleSpec = {
  key: string;
  mappingId: string;
  root: string;
  file: string;
  exportName?: string;
  /** The root's real path, pinned by the server at boot: every later read is checked against it. */
  realRoot?: string;
};

/** Limits applied inside the transform process. */
export type SandboxLimits = {
  memoryLimitMb: number;
  cpuTimeoutMs: number;
  /** UTF-8 bytes of a call's output (its JSON text). */
  maxOutputBytes: number;
  recycleAfterCalls: number;
  recycleAboveHeapMb: number;
  /** Leave WebAssembly, SharedArrayBuffer and Atomics in the transforms' global. */
  allowWebAssembly: boolean;
};

/** Why a call failed, as the sandbox saw it. */
export type FailureKind = 'threw' | 'timeout' | 'memory' | 'output' | 'unavailable';

/** One file of a module as last compiled: its path, the signature it was read at, its text. */
export type SourceFile = { file: string; signature: string; code: string };

/** The files a module was last compiled from (the server holds their text for a restart). */
export type CompiledFiles = { key: string; files: Array<{ file: string; signature: string }> };

export type ToSandbox =
  | {
      type: 'load';
      modules: ModuleSpec[];
      limits: SandboxLimits;
      /** Last good sources by module key: compiled instead of the files on disk. */
      sources?: Array<{ key: string; files: SourceFile[] }>;
    }
  /** A newer last good version another process compiled: kept as this one's fallback. */
  | { type: 'adopt'; key: string; files: SourceFile[] }
  | { type: 'call'; id: number; key: string; input: string };

export type ConsoleLevel = 'info' | 'warn' | 'error' | 'debug';
export type ConsoleLine = { level: ConsoleLevel; text: string };

export type LoadError = { key: string; message: string };

export type ResultMessage = {
  type: 'result';
  id: number;
  /** JSON text of the returned value; absent when the function returned undefined. */
  output?: string;
  failure?: { kind: FailureKind; message: string };
  console: ConsoleLine[];
  droppedLines: number;
  /**
   * The call the process starts next, of those it holds (it takes its mappings in turn); absent
   * when it holds none: then it starts the next call it is sent.
   */
  next?: number;
};

export type FromSandbox =
  | { type: 'loaded'; errors: LoadError[] }
  /**
   * The process starts loading module `key` (at start or in a rebuild): if it dies or hangs
   * before the next message, that module's load is the suspect.
   */
  | { type: 'loading'; key: string }
  /** The isolate is being rebuilt (recycling): the calls waiting have not started. */
  | { type: 'rebuilding' }
  /** The rebuild is done: the next call starts now. */
  | { type: 'rebuilt' }
  /** A module compiled from disk (`files` empty: it is refused, nothing of it may be kept). */
  | ({ type: 'compiled' } & CompiledFiles)
  | ResultMessage
  | { type: 'log'; key: string; level: 'info' | 'warn' | 'error'; message: string };

/** console.* lines one call may return (more are counted as dropped). */
export const CONSOLE_LINES_PER_CALL = 20;
/** Characters of one console line; longer lines are cut. */
export const CONSOLE_LINE_CHARS = 1000;
/** Characters of a failure reason or a process log message. */
export const MESSAGE_CHARS = 2000;
/** A failure reason or log message cut to MESSAGE_CHARS. */
export function cutMessage(text: string): string {
  return headUnits(text, MESSAGE_CHARS);
}

/** Console lines one call can claim it dropped (a bound on a lying count). */
export const MAX_DROPPED = 1_000_000;
/**
 * Recompiles of one module after edits on disk a process makes per minute (each is reported to
 * the server); edits past it are picked up later. Fixed windows that the server's do not line
 * up with: at most twice this in any minute of the server's, beside one load per module at
 * start, well within maxReportsPerMinute.
 */
export const RECOMPILES_PER_MODULE_PER_MINUTE = 8;

/** Reports of compiled modules a process with `modules` modules may send a minute (more is a flood). */
export function maxReportsPerMinute(modules: number): number {
  return 100 + 20 * modules;
}

/** Files one module's report may list; a larger module graph is not kept (restarts read disk). */
export const MAX_REPORTED_FILES = 64;
/** Characters of a reported path or signature. */
export const PATH_CHARS = 1024;
/** Nesting depth of any message (the deepest, a result with console lines, is 3). */
export const MESSAGE_DEPTH = 4;

/** Bytes of the JSON around a message's strings (its type, field names, punctuation). */
const ENVELOPE_BYTES = 256;

/**
 * The longest text an honest process sends for a message of `type` other than a result (whose
 * bound is the frame's, maxFrameBytes): each string at its cap, every character escaped (6
 * bytes). A longer one (a log line padded with whitespace to the frame's cap costs the server
 * ~10 ms to scan and parse, a thousand times a minute within the log budget) is a lie.
 */
export function maxMessageBytes(type: Exclude<FromSandbox['type'], 'result'>, modules: number) {
  const text = MESSAGE_CHARS * 6;
  if (type === 'log') return 2 * text + ENVELOPE_BYTES;
  if (type === 'loading') return text + ENVELOPE_BYTES;
  if (type === 'loaded') return modules * (2 * text + ENVELOPE_BYTES) + ENVELOPE_BYTES;
  if (type === 'compiled')
    return MAX_REPORTED_FILES * (PATH_CHARS * 2 * 6 + 64) + text + ENVELOPE_BYTES;
  return ENVELOPE_BYTES;
}

/** The largest frame a process may send for a given output cap: anything longer is a lie. */
export function maxFrameBytes(maxOutputBytes: number, modules: number): number {
  // The output is at most maxOutputBytes of UTF-8, so at most as many characters; JSON escaping
  // of any character costs at most 6 bytes ("\u0000"); plus room for the envelope.
  const output = maxOutputBytes * 6;
  const consoleLines = CONSOLE_LINES_PER_CALL * (CONSOLE_LINE_CHARS * 6 + 64);
  const others = Math.max(maxMessageBytes('loaded', modules), maxMessageBytes('compiled', modules));
  return output + consoleLines + others + 64 * 1024;
}
