/**
 * The supervisor of the transform processes: at most `size` processes
 * (never more alive at once: a replacement is spawned only after the old
 * process has exited), calls queued in the server and handed to a ready
 * process, each bounded by its own deadline from the moment its process
 * starts on it (when it is sent, or when the calls before it are answered).
 * A call that misses it fails with transform_timeout and only its process
 * is killed; that process's other calls go back to the queue. Those of
 * other mappings are never charged for it (they were not running); those of
 * the same mapping are sent again once (a flood of one mapping's poisoned
 * calls then costs two restarts a batch, not a deadline each). A process
 * that dies on its own fails the call it was running and sends the others
 * again, once. A process that sends
 * anything invalid is killed and its calls fail with transform_failed. The
 * server keeps answering meanwhile.
 *
 * What the server holds for a call, from when it is made until it is
 * answered, is the frame it sends: the caller's parsed request is not kept
 * alive by the call (engine/ingress/commit.ts drops it). Those bytes are
 * bounded in total (maxWaitingBytes), beside the number of waiting calls.
 */
import { HookError } from '../errors.ts';
import {
  type FailureReason,
  failureMessage,
  outcomeOf,
  type TransformResult,
} from './call-outcome.ts';
import { createCallQueue } from './call-queue.ts';
import { encodeFrame } from './frames.ts';
import type { Logger } from '../log.ts';
import {
  type TransformCalled,
  transformCalled,
  transformRestarted,
  type TransformRestarted,
} from '../observe/events.ts';
import { readUnchanged, realRootOf } from './module-files.ts';
import { type ProcessLink, spawnLink } from './process-link.ts';
import { createTransformLog, LOGS_PER_MODULE_PER_MINUTE } from './transform-log.ts';
import {
  type FromSandbox,
  type LoadError,
  type CompiledFiles,
  type ModuleSpec,
  maxFrameBytes,
  type ResultMessage,
  type SandboxLimits,
  type SourceFile,
} from './protocol.ts';

export type SupervisorSettings = Omit<SandboxLimits, 'allowWebAssembly'> & {
  /** The server's own bound on one call, counted from when it is sent to a ready process. */
  deadlineMs: number;
  /** Console lines per mapping per minute that reach the log. */
  consoleLinesPerMinute: number;
  allowWebAssembly?: boolean;
  /** Calls that may wait in the server for a process; past it a call is refused (503). */
  maxWaitingCalls?: number;
  /** Bytes the frames of every unanswered call may hold in total; past it a call is refused (503). */
  maxWaitingBytes?: number;
};

/** Engine-internal options (tests run a hostile child through `entry`). */
export type SupervisorOptions = { size?: number; entry?: string };

export type { TransformResult };

export type TransformSupervisor = {
  /** Start the processes and load the modules; resolves with load errors by module key. */
  start(): Promise<Map<string, string>>;
  /** Call a transform; throws HookError transform_failed / transform_timeout / transform_invalid_output. */
  call(key: string, input: unknown): Promise<TransformResult>;
  /** Stop every process (resolves once they have exited). */
  close(): Promise<void>;
  /** Processes up and loaded, of how many (what readiness reports). */
  processes(): { ready: number; total: number };
};

type Call = {
  /** Fixed when the call is made: a call sent again after a kill goes to a fresh process. */
  id: number;
  key: string;
  /** The encoded call command: all the server holds of the call's input. */
  frame: Buffer;
  resolve: (r: TransformResult) => void;
  reject: (e: HookError) => void;
  /** Kills it was sent again after and charged for (see requeueAll). */
  charged: number;
  timer?: NodeJS.Timeout;
};

type Slot = {
  link?: ProcessLink;
  state: 'idle' | 'starting' | 'ready' | 'stopping';
  inflight: Map<number, Call>;
  /** Starts in a row that ended before the modules loaded (for the back-off). */
  failedStarts: number;
  /** The current process has loaded its modules. */
  loaded: boolean;
  loadTimer?: NodeJS.Timeout;
  /** Boot only: who waits for the first load. */
  onLoaded?: (errors: LoadError[]) => void;
  onStartFailed?: (err: Error) => void;
  /** Who waits for the current process to be gone. */
  exitWaiters: Array<() => void>;
  /** Why the server killed the current process (a restart's reason). */
  stopReason?: TransformRestarted['reason'];
};

const PROCESS_FILE = new URL('./transform-process.ts', import.meta.url).pathname;
const LOAD_TIMEOUT_MS = 15_000;
/** A call that finds no ready process for this long fails (transform_failed, not a timeout). */
const QUEUE_WAIT_MS = 15_000;
const MAX_BACKOFF_MS = 5_000;
/**
 * Calls one process holds at once (the rest wait in the server, their deadline not started):
 * enough to keep its isolate busy, few enough that a killed process sends back a bounded batch.
 */
const CALLS_PER_PROCESS = 32;
const DEFAULT_MAX_WAITING = 256;
/**
 * Default of maxWaitingBytes (32 MiB): a hundred-odd calls of the largest body, thousands of
 * ordinary events. Counted over the frames (JSON-escaped input), so a body of characters that
 * escape six-fold is charged what it really holds.
 */
export const DEFAULT_MAX_WAITING_BYTES = 32 * 1024 * 1024;
/**
 * Kills a call may be charged for before it fails. A call present when its process dies on its
 * own, or is killed for a call of the same mapping, is charged: what kills a process outside
 * the call it is running (while parsing its commands) would otherwise kill it for ever, and
 * the calls of a poisoned mapping are purged in two restarts, not one deadline each.
 */
const CHARGES_PER_CALL = 2;
const BUSY = new HookError(
  'unavailable',
  'The transforms are busy (hooks.transforms.maxWaitingCalls, maxWaitingBytes); retry later.',
  {
    headers: { 'retry-after': '1' },
  },
);

/** Create the supervisor for a set of modules (nothing runs until start). */
export function createSupervisor(
  specs: readonly ModuleSpec[],
  settings: SupervisorSettings,
  logger: Logger,
  options: SupervisorOptions = {},
): TransformSupervisor {
  const modules = specs.map((m) => ({ ...m, realRoot: m.realRoot ?? realRootOf(m.root) }));
  const mappingOf = new Map(modules.map((m) => [m.key, m.mappingId]));
  const moduleOf = new Map(modules.map((m) => [m.key, m]));
  // Each module's last good sources, read here when a process reports it compiled them: a
  // restarted process compiles these, not a broken edit on disk.
  const lastGood = new Map<string, SourceFile[]>();
  const slots: Slot[] = Array.from({ length: Math.max(1, options.size ?? 1) }, () => ({
    state: 'idle',
    inflight: new Map(),
    failedStarts: 0,
    loaded: false,
    exitWaiters: [],
  }));
  const queue = createCallQueue<Call>(QUEUE_WAIT_MS, (call) =>
    call.reject(
      new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'no-process')),
    ),
  );
  const log = createTransformLog(logger, mappingOf, settings.consoleLinesPerMinute);
  let nextId = 1;
  let turn = 0;
  // Bytes of the frames of every call made and not yet settled (waiting or sent).
  let heldBytes = 0;
  const maxWaitingCalls = settings.maxWaitingCalls ?? DEFAULT_MAX_WAITING;
  const maxWaitingBytes = settings.maxWaitingBytes ?? DEFAULT_MAX_WAITING_BYTES;
  let closed = false;
  let started: Promise<Map<string, string>> | undefined;
  const limits: SandboxLimits = {
    memoryLimitMb: settings.memoryLimitMb,
    cpuTimeoutMs: settings.cpuTimeoutMs,
    maxOutputBytes: settings.maxOutputBytes,
    recycleAfterCalls: settings.recycleAfterCalls,
    recycleAboveHeapMb: settings.recycleAboveHeapMb,
    allowWebAssembly: settings.allowWebAssembly ?? false,
  };
  const linkOptions = {
    entry: options.entry ?? PROCESS_FILE,
    execArgv: ['--no-node-snapshot', '--disable-warning=ExperimentalWarning'],
    maxFrameBytes: maxFrameBytes(settings.maxOutputBytes, modules.length),
    maxOutputChars: settings.maxOutputBytes,
    maxModules: modules.length,
    // Far above what an honest process sends (a line per reload); only LOGS_PER_MODULE_PER_MINUTE reach the log.
    maxLogsPerMinute: 1000 + 10 * LOGS_PER_MODULE_PER_MINUTE * modules.length,
  };

  /** Spawn the slot's process; only ever called when the slot has none alive. */
  function spawnSlot(slot: Slot): void {
    slot.state = 'starting';
    slot.loaded = false;
    const link = spawnLink(linkOptions, logger, {
      message: (message) => onMessage(slot, message),
      refused: (reason) => onRefused(slot, reason),
      exit: (code, signal) => onExit(slot, code, signal),
    });
    slot.link = link;
    slot.loadTimer = setTimeout(() => {
      logger.warn({ pid: link.pid }, 'transform process did not load in time; killing it');
      stopSlot(slot, 'load_timeout');
    }, LOAD_TIMEOUT_MS);
    const sources = [...lastGood].map(([key, files]) => ({ key, files }));
    link.send({ type: 'load', modules: [...modules], limits, sources });
  }

  function onMessage(slot: Slot, message: FromSandbox): void {
    if (message.type === 'loaded') onLoaded(slot, message.errors);
    else if (message.type === 'result') onResult(slot, message);
    else if (!mappingOf.has(message.key)) onRefused(slot, 'message for an unknown module');
    else if (message.type === 'compiled') onCompiled(message);
    else log.process(message);
  }

  /**
   * A process compiled a module from disk: keep the text of those files, read here (contained,
   * and only if each still has the signature reported). Nothing kept for a refused module.
   */
  function onCompiled({ key, files }: CompiledFiles): void {
    const root = moduleOf.get(key)?.realRoot as string;
    const read: SourceFile[] = [];
    for (const { file, signature } of files) {
      const code = readUnchanged(root, file, signature);
      // Changed again since: that process will recompile and report the newer version.
      if (code === undefined) return;
      read.push({ file, signature, code });
    }
    if (read.length === 0) lastGood.delete(key);
    else lastGood.set(key, read);
  }

  function onLoaded(slot: Slot, errors: LoadError[]): void {
    if (slot.state !== 'starting' || errors.some((e) => !mappingOf.has(e.key))) {
      onRefused(slot, 'unexpected "loaded"');
      return;
    }
    clearTimeout(slot.loadTimer);
    slot.state = 'ready';
    slot.loaded = true;
    slot.failedStarts = 0;
    const report = slot.onLoaded;
    slot.onLoaded = undefined;
    slot.onStartFailed = undefined;
    if (report) report(errors);
    else
      for (const { key, message } of errors)
        logger.error({ mappingId: mappingOf.get(key) }, `transform reload failed: ${message}`);
    pump();
  }

  function onResult(slot: Slot, message: ResultMessage): void {
    const call = slot.inflight.get(message.id);
    // An id never sent to this process, or answered already: the process is lying.
    if (!call || slot.state !== 'ready') {
      onRefused(slot, 'answer to an unknown call');
      return;
    }
    slot.inflight.delete(message.id);
    clearTimeout(call.timer);
    log.console(call.key, message);
    const mappingId = mappingOf.get(call.key);
    if (message.failure) {
      // The reason may quote payload data: only at debug level.
      logger.warn({ mappingId, kind: message.failure.kind }, 'transform failed');
      logger.debug({ mappingId, reason: message.failure.message }, 'transform failure reason');
    }
    const outcome = outcomeOf(mappingId, message);
    if (outcome instanceof HookError) call.reject(outcome);
    else call.resolve(outcome);
    armOldest(slot);
    pump();
  }

  function onRefused(slot: Slot, reason: string): void {
    if (slot.state === 'stopping' || slot.state === 'idle') return;
    logger.warn(
      { pid: slot.link?.pid, reason },
      'transform process sent an invalid message; restarting it',
    );
    failAll(slot, 'crash');
    stopSlot(slot, 'invalid_message');
  }

  /** The call `id` missed its deadline: it fails, its process is killed, the others go back to the queue. */
  function onLate(slot: Slot, id: number): void {
    const call = slot.inflight.get(id);
    if (!call) return;
    slot.inflight.delete(id);
    const mappingId = mappingOf.get(call.key);
    logger.warn(
      { mappingId, deadlineMs: settings.deadlineMs },
      'transform missed its deadline; restarting its process',
    );
    call.reject(new HookError('transform_timeout', failureMessage(mappingId, 'timeout')));
    stopSlot(slot, 'timeout');
    // The others were waiting behind it, not running: another mapping's never pay for it.
    requeueAll(slot, (other) => other.key === call.key);
  }

  /**
   * The process died on its own (an abort on a catastrophic isolate error, say): the oldest call
   * (the one its isolate was running, calls run in order) fails, the others are sent again.
   */
  function onCrash(slot: Slot): void {
    const [oldest] = slot.inflight;
    if (oldest) {
      const [id, call] = oldest;
      slot.inflight.delete(id);
      clearTimeout(call.timer);
      call.reject(
        new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'crash')),
      );
    }
    requeueAll(slot, () => true);
  }

  /**
   * Calls a killed process held go back to the front of the queue; those `charged` for the kill
   * count it, and one charged CHARGES_PER_CALL times fails.
   */
  function requeueAll(slot: Slot, charged: (call: Call) => boolean): void {
    const again: Call[] = [];
    for (const call of slot.inflight.values()) {
      clearTimeout(call.timer);
      call.timer = undefined;
      if (charged(call)) call.charged++;
      if (call.charged >= CHARGES_PER_CALL)
        call.reject(
          new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'crash')),
        );
      else again.push(call);
    }
    slot.inflight.clear();
    for (const call of again.reverse()) queue.add(call, true);
    pump();
  }

  function failAll(slot: Slot, kind: FailureReason): void {
    for (const call of slot.inflight.values()) {
      clearTimeout(call.timer);
      call.reject(new HookError('transform_failed', failureMessage(mappingOf.get(call.key), kind)));
    }
    slot.inflight.clear();
  }

  function stopSlot(slot: Slot, reason?: TransformRestarted['reason']): void {
    if (slot.state === 'idle') return;
    slot.state = 'stopping';
    slot.stopReason = reason;
    clearTimeout(slot.loadTimer);
    slot.link?.kill();
  }

  function onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const wasStarting = !slot.loaded;
    const crashed = slot.state !== 'stopping' && !closed;
    clearTimeout(slot.loadTimer);
    // Idle first: calls sent again below must not come back to this process.
    slot.state = 'idle';
    slot.link = undefined;
    if (crashed) {
      logger.warn({ code, signal }, 'transform process stopped; restarting');
      onCrash(slot);
    } else failAll(slot, 'crash');
    for (const waiter of slot.exitWaiters.splice(0)) waiter();
    if (slot.onStartFailed) {
      const fail = slot.onStartFailed;
      slot.onLoaded = undefined;
      slot.onStartFailed = undefined;
      fail(new Error(`the transform process exited (${signal ?? code}) while loading`));
      return;
    }
    if (closed) return;
    const reason = crashed ? 'crash' : (slot.stopReason ?? 'crash');
    if (transformRestarted.hasSubscribers) transformRestarted.publish({ reason });
    if (wasStarting) slot.failedStarts++;
    // Only now, with the old process gone, may its replacement start.
    const delay = Math.min(
      MAX_BACKOFF_MS,
      slot.failedStarts === 0 ? 0 : 250 * 2 ** (slot.failedStarts - 1),
    );
    setTimeout(() => {
      if (!closed && slot.state === 'idle') spawnSlot(slot);
    }, delay).unref();
  }

  /** Hand queued calls to the least busy ready process, within each process's share. */
  function pump(): void {
    while (queue.size > 0) {
      let best: Slot | undefined;
      // Ties go round the processes, so a light load is spread too.
      turn = (turn + 1) % slots.length;
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[(turn + i) % slots.length] as Slot;
        if (slot.state !== 'ready' || slot.inflight.size >= CALLS_PER_PROCESS) continue;
        if (!best || slot.inflight.size < best.inflight.size) best = slot;
      }
      if (!best) return;
      send(best, queue.take() as Call);
    }
  }

  function send(slot: Slot, call: Call): void {
    call.timer = undefined;
    slot.inflight.set(call.id, call);
    armOldest(slot);
    slot.link?.sendFrame(call.frame);
  }

  /**
   * The deadline runs for the oldest call a process holds: the one its isolate is running
   * (a process runs its calls in order). The calls behind it are waiting, not late, so each
   * starts its own deadline when the calls before it have been answered.
   */
  function armOldest(slot: Slot): void {
    const oldest = slot.inflight.entries().next();
    if (oldest.done) return;
    const [id, call] = oldest.value;
    // Decided after the loop's next poll for I/O (setImmediate runs after it): when the loop
    // was busy past the deadline, an answer already in the pipe is read first and wins.
    call.timer ??= setTimeout(() => setImmediate(() => onLate(slot, id)), settings.deadlineMs);
  }

  function startSlot(slot: Slot): Promise<LoadError[]> {
    return new Promise((resolve, reject) => {
      slot.onLoaded = resolve;
      slot.onStartFailed = reject;
      spawnSlot(slot);
    });
  }

  return {
    processes: () => ({
      ready: slots.filter((slot) => slot.state === 'ready').length,
      total: slots.length,
    }),
    start() {
      started ??= Promise.all(slots.map(startSlot)).then(
        (results) => new Map((results[0] ?? []).map((e) => [e.key, e.message])),
      );
      return started;
    },
    async call(key, input) {
      if (closed) throw new HookError('transform_failed', 'The transform process is stopped.');
      if (!started) void this.start().catch(() => undefined);
      if (queue.size >= maxWaitingCalls) throw busy(key);
      const id = nextId++;
      // Encoded now: the call holds these bytes, not the caller's objects (nor a second copy).
      const frame = encodeFrame({ type: 'call', id, key, input: JSON.stringify(input) });
      if (!mayHold(heldBytes, frame.length, maxWaitingBytes)) throw busy(key);
      heldBytes += frame.length;
      const result = new Promise<TransformResult>((resolve, reject) => {
        let held = true;
        const release = () => {
          if (held) heldBytes -= frame.length;
          held = false;
        };
        queue.add({
          id,
          key,
          frame,
          resolve: (r) => {
            release();
            resolve(r);
          },
          reject: (e) => {
            release();
            reject(e);
          },
          charged: 0,
        });
        pump();
      });
      return transformCalled.hasSubscribers ? observed(result, mappingOf.get(key)) : result;
    },
    async close() {
      closed = true;
      for (const call of queue.clear())
        call.reject(new HookError('transform_failed', 'The transform process is stopped.'));
      await Promise.all(slots.map(closeSlot));
    },
  };

  /** Refused at once (503): the server holds as many calls, or bytes of calls, as it may. */
  function busy(key: string): HookError {
    if (transformCalled.hasSubscribers)
      transformCalled.publish({ mappingId: mappingOf.get(key), outcome: 'busy', durationMs: 0 });
    return BUSY;
  }

  async function closeSlot(slot: Slot): Promise<void> {
    if (slot.state === 'idle') return;
    const gone = new Promise<void>((resolve) => slot.exitWaiters.push(resolve));
    stopSlot(slot);
    await gone;
  }
}

/** Publish how a call settled (only called while someone listens). */
function observed(
  call: Promise<TransformResult>,
  mappingId: string | undefined,
): Promise<TransformResult> {
  const started = performance.now();
  const publish = (outcome: TransformCalled['outcome']) =>
    transformCalled.publish({ mappingId, outcome, durationMs: performance.now() - started });
  return call.then(
    (result) => {
      publish('ok');
      return result;
    },
    (err: HookError) => {
      publish(callOutcome(err.code));
      throw err;
    },
  );
}

/** Whether one more call of `bytes` fits; a lone call always does (a body the server accepted). */
export function mayHold(held: number, bytes: number, max: number): boolean {
  return held === 0 || held + bytes <= max;
}

function callOutcome(code: string): TransformCalled['outcome'] {
  if (code === 'transform_timeout') return 'timeout';
  if (code === 'transform_invalid_output') return 'invalid_output';
  return 'failed';
}
