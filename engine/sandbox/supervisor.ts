/**
 * The supervisor of the transform processes: at most `size` processes
 * (never more alive at once: a replacement is spawned only after the old
 * process has exited, process-slot.ts), calls queued in the server in a lane
 * per mapping and handed, the lanes in turn, to the least busy ready process
 * (which runs the calls it holds by mapping in turn too); at the waiting
 * bound a mapping holding less takes the place of one holding more
 * (fair-share.ts). Each call is bounded by its own
 * deadline from the moment its process starts on it; a call that misses it
 * fails with transform_timeout and only its process is killed; that
 * process's other calls go back to the queue (process-calls.ts). Those of
 * other mappings are never charged for it (they were not running); those of
 * the same mapping are sent again once (a flood of one mapping's poisoned
 * calls then costs two restarts a batch, not a deadline each:
 * kill-charges.ts). A process that dies on its own fails the call it was
 * running and sends the others again, charged the same way (a crash is the
 * running call's doing). A process that sends anything
 * invalid is killed and its calls fail with transform_failed. A new process
 * compiles each module's last good version, and a version one process
 * compiled is handed to the others, so every process falls back to the same
 * one on a broken edit (version-handoff.ts). The server keeps answering
 * meanwhile.
 *
 * What the server holds for a call, from when it is made until it is
 * answered, is the frame it sends and the caller's raw body: the caller's
 * parsed request is not kept alive by the call (engine/ingress/commit.ts
 * drops it). Those bytes are bounded in total (maxWaitingBytes), beside the
 * number of waiting calls (waiting-bound.ts).
 */
import { HookError } from '../errors.ts';
import { observed, publishBusy } from './call-events.ts';
import { failureMessage, type TransformResult } from './call-outcome.ts';
import { createCallQueue } from './call-queue.ts';
import { encodeFrame } from './frames.ts';
import type { Logger } from '../log.ts';
import { transformCalled, transformRestarted } from '../observe/events.ts';
import { realRootOf } from './module-files.ts';
import { type Call, createProcessCalls } from './process-calls.ts';
import { spawnLink } from './process-link.ts';
import {
  closeSlot,
  createSlot,
  leastBusy,
  restartDelay,
  type Slot as ProcessSlot,
  stopSlot,
} from './process-slot.ts';
import { createTransformLog, LOGS_PER_MODULE_PER_MINUTE } from './transform-log.ts';
import {
  type FromSandbox,
  type LoadError,
  type ModuleSpec,
  maxFrameBytes,
  maxReportsPerMinute,
  type ResultMessage,
  type SandboxLimits,
} from './protocol.ts';
import { createLoadSuspects } from './load-suspects.ts';
import { createLoadWatch } from './process-loading.ts';
import { createVersionHandoff } from './version-handoff.ts';
import { BUSY, createWaitingBound, fits } from './waiting-bound.ts';
import { makeRoom } from './fair-share.ts';
import { keyHoldsBackslash } from '../foreign-json.ts';

export { DEFAULT_MAX_WAITING_BYTES, mayHold } from './waiting-bound.ts';

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
  /**
   * Call a transform; throws HookError transform_failed / transform_timeout /
   * transform_invalid_output. `alsoHeld`: bytes the caller keeps while it waits (the request's
   * raw body), counted in maxWaitingBytes beside the call's own.
   */
  call(key: string, input: unknown, alsoHeld?: number): Promise<TransformResult>;
  /** Stop every process (resolves once they have exited). */
  close(): Promise<void>;
  /** Processes up and loaded, of how many (what readiness reports). */
  processes(): { ready: number; total: number };
};

type Slot = ProcessSlot<Call>;

const PROCESS_FILE = new URL('./transform-process.ts', import.meta.url).pathname;
const LOAD_TIMEOUT_MS = 15_000;
/** A call that finds no ready process for this long fails (transform_failed, not a timeout). */
const QUEUE_WAIT_MS = 15_000;

/** Create the supervisor for a set of modules (nothing runs until start). */
export function createSupervisor(
  specs: readonly ModuleSpec[],
  settings: SupervisorSettings,
  logger: Logger,
  options: SupervisorOptions = {},
): TransformSupervisor {
  const modules = specs.map((m) => ({ ...m, realRoot: m.realRoot ?? realRootOf(m.root) }));
  const mappingOf = new Map(modules.map((m) => [m.key, m.mappingId]));
  const slots: Slot[] = Array.from({ length: Math.max(1, options.size ?? 1) }, () =>
    createSlot<Call>(),
  );
  const versions = createVersionHandoff(modules, slots);
  const suspects = createLoadSuspects();
  const queue = createCallQueue<Call>(QUEUE_WAIT_MS, (call) =>
    call.reject(
      new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'no-process')),
    ),
  );
  const log = createTransformLog(logger, mappingOf, settings.consoleLinesPerMinute);
  const calls = createProcessCalls({
    mappingOf,
    deadlineMs: settings.deadlineMs,
    queue,
    log,
    logger,
    pump,
  });
  const loadWatch = createLoadWatch({
    cpuTimeoutMs: settings.cpuTimeoutMs,
    logger,
    mappingOf,
    pause: calls.pause,
    resume: calls.resume,
  });
  let nextId = 1;
  let turn = 0;
  const bound = createWaitingBound(settings);
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
    maxOutputBytes: settings.maxOutputBytes,
    maxModules: modules.length,
    // Far above what an honest process sends (a line per reload); only LOGS_PER_MODULE_PER_MINUTE reach the log.
    maxLogsPerMinute: 1000 + 10 * LOGS_PER_MODULE_PER_MINUTE * modules.length,
    // An honest process reports a module when it loads it from disk and after each edit it
    // recompiles (RECOMPILES_PER_MODULE_PER_MINUTE at most).
    maxReportsPerMinute: maxReportsPerMinute(modules.length),
  };

  /** Spawn the slot's process; only ever called when the slot has none alive. */
  function spawnSlot(slot: Slot): void {
    slot.state = 'starting';
    slot.loaded = false;
    slot.running = undefined;
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
    const loads = modules.filter((m) => !suspects.isAside(m.key));
    loadWatch.spawned(
      slot,
      loads.map((m) => m.key),
    );
    link.send({
      type: 'load',
      modules: loads,
      limits,
      sources: versions.sources().filter(({ key }) => !suspects.isAside(key)),
    });
  }

  function onMessage(slot: Slot, message: FromSandbox): void {
    loadWatch.heard(slot);
    if (message.type === 'loaded') onLoaded(slot, message.errors);
    else if (message.type === 'result') onResult(slot, message);
    else if (
      message.type === 'rebuilding' ||
      message.type === 'rebuilt' ||
      message.type === 'loading'
    ) {
      if (!loadWatch.loadMessage(slot, message)) onRefused(slot, `"${message.type}" out of turn`);
    } else if (!mappingOf.has(message.key)) onRefused(slot, 'message for an unknown module');
    else if (message.type === 'compiled') versions.compiled(slot, message);
    else log.process(message);
  }

  /** The slot's process is gone while loading module `key`: it may be set aside. */
  function loadDied(key: string): void {
    if (!suspects.died(key)) return;
    const mappingId = mappingOf.get(key);
    logger.error(
      { mappingId },
      'transform module set aside: it stopped the transform process while loading, twice; fix it and reload the configuration',
    );
    for (let call = queue.takeFirst((c) => c.key === key); call; ) {
      call.reject(new HookError('transform_failed', failureMessage(mappingId, 'set-aside')));
      call = queue.takeFirst((c) => c.key === key);
    }
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
    if (!calls.answer(slot, message)) onRefused(slot, 'answer to a call it was not running');
    else loadWatch.answered(slot);
  }

  function onRefused(slot: Slot, reason: string): void {
    if (slot.state === 'stopping' || slot.state === 'idle') return;
    logger.warn(
      { pid: slot.link?.pid, reason },
      'transform process sent an invalid message; restarting it',
    );
    calls.failAll(slot, 'crash');
    stopSlot(slot, 'invalid_message');
  }

  function onExit(slot: Slot, code: number | null, signal: NodeJS.Signals | null): void {
    const wasStarting = !slot.loaded;
    const crashed = slot.state !== 'stopping' && !closed;
    const { suspect, loading } = loadWatch.exited(slot, crashed);
    clearTimeout(slot.loadTimer);
    // Idle first: calls sent again below must not come back to this process.
    slot.state = 'idle';
    slot.link = undefined;
    if (crashed) logger.warn({ code, signal }, 'transform process stopped; restarting');
    if (loading) calls.diedLoading(slot, suspect);
    else if (crashed) calls.crashed(slot);
    else calls.failAll(slot, 'crash');
    for (const waiter of slot.exitWaiters.splice(0)) waiter();
    if (slot.onStartFailed) {
      const fail = slot.onStartFailed;
      slot.onLoaded = undefined;
      slot.onStartFailed = undefined;
      fail(new Error(`the transform process exited (${signal ?? code}) while loading`));
      return;
    }
    if (closed) return;
    if (suspect !== undefined) loadDied(suspect);
    const reason = crashed ? 'crash' : (slot.stopReason ?? 'crash');
    if (transformRestarted.hasSubscribers) transformRestarted.publish({ reason });
    if (wasStarting) slot.failedStarts++;
    // Only now, with the old process gone, may its replacement start.
    setTimeout(() => {
      if (!closed && slot.state === 'idle') spawnSlot(slot);
    }, restartDelay(slot.failedStarts)).unref();
  }

  /**
   * Hand queued calls to the least busy ready process, within each process's share; the
   * mappings' lanes take turns (call-queue.ts).
   */
  function pump(): void {
    while (queue.size > 0) {
      // Ties go round the processes, so a light load is spread too.
      turn = (turn + 1) % slots.length;
      if (!leastBusy(slots, turn)) return;
      // Calls sent again after a kill wait first, for a process holding no younger call (the
      // replacement); younger calls go on meanwhile.
      let best: Slot | undefined;
      const call = queue.takeFirst((c, again) => {
        best = leastBusy(slots, turn, again ? c.id : undefined);
        return best !== undefined;
      });
      if (!call || !best) return;
      calls.send(best, call);
    }
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
    async call(key, input, alsoHeld = 0) {
      if (closed) throw new HookError('transform_failed', 'The transform process is stopped.');
      if (suspects.isAside(key))
        throw new HookError('transform_failed', failureMessage(mappingOf.get(key), 'set-aside'));
      if (!started) void this.start().catch(() => undefined);
      const text = JSON.stringify(input);
      // The transform's JSON.parse has the defect foreign-json.ts guards against: a key holding
      // a backslash (a query or form field name; the payload's were refused already) is refused.
      if (keyHoldsBackslash(text))
        throw new HookError(
          'invalid_payload',
          'A field name of the request holds a backslash; such names are refused (after one, the JSON parser can misread names of later requests).',
        );
      const id = nextId++;
      // Encoded now: the call holds these bytes, not the caller's objects (nor a second copy).
      const frame = encodeFrame({ type: 'call', id, key, input: text });
      const bytes = frame.length + alsoHeld;
      const room = bound.room(queue.size);
      const given = fits(room, bytes) ? [] : makeRoom(queue.lanes(), key, bytes, room);
      if (!given) throw busy(key);
      // Another mapping holding more gives way: its newest waiting calls are refused instead.
      for (const lane of given) {
        const call = queue.takeNewest(lane);
        if (!call) continue;
        publishBusy(mappingOf.get(call.key));
        call.reject(BUSY);
      }
      const release = bound.hold(bytes);
      const result = new Promise<TransformResult>((resolve, reject) => {
        queue.add({
          id,
          key,
          frame,
          bytes,
          resolve: (r) => {
            release();
            resolve(r);
          },
          reject: (e) => {
            release();
            reject(e);
          },
          charged: 0,
          crashes: 0,
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
    publishBusy(mappingOf.get(key));
    return BUSY;
  }
}
