/**
 * The transform process: a child of the server that runs operator-supplied
 * transform modules in isolated-vm. One isolate with a memory limit, one warm
 * context per module (a context per call leaks), a CPU timeout on every call,
 * JSON strings in and out, nothing of the host reachable from inside. The
 * isolate is rebuilt after N calls, above a heap threshold, or when disposed.
 * Its modules (process-modules.ts) keep their last good sources (as does
 * the server, for a restart): a rebuild compiles those, not a broken edit.
 * Some allocations defeat isolated-vm's own limits; that is why this runs in a
 * process the server can kill (supervisor.ts). Commands arrive as frames on
 * stdin, answers leave as frames on fd 3. Run with --no-node-snapshot.
 */
import { Socket } from 'node:net';
import ivm from 'isolated-vm';
import { overUtf8Bytes } from '../utf8.ts';
import { checkDrain } from './console-drain.ts';
import { createLanes } from './lanes.ts';
import { encodeFrame, FrameReader } from './frames.ts';
import { OUTPUT_TOO_LARGE, PENDING, THREW } from './isolate-scripts.ts';
import { createProcessModules, type Loaded } from './process-modules.ts';
import {
  type ConsoleLine,
  cutMessage,
  type FailureKind,
  type FromSandbox,
  type ModuleSpec,
  type ResultMessage,
  type SandboxLimits,
  type ToSandbox,
} from './protocol.ts';

const MB = 1024 * 1024;

let limits: SandboxLimits;
let specs: ModuleSpec[] = [];
let isolate: ivm.Isolate;
let calls = 0;
// Resolves when the isolate and modules are (re)built; calls wait on it.
let ready: Promise<void> = Promise.resolve();
// Calls running in the current isolate, and who waits for them to end before a rebuild.
let inflight = 0;
let recycling = false;
const idleWaiters: Array<() => void> = [];

/** A call received from the server. */
type Received = { id: number; key: string; input: string };

/**
 * Calls run one at a time: the isolate runs one at a time anyway, but a call queued in it would
 * hold up the console drain (applySync) of the call before it, so no answer would leave before
 * the whole batch had run, and the server, which times the running call, would find it late.
 * The calls waiting meanwhile are taken by mapping in turn (lanes.ts), so a burst of one
 * mapping's calls holds up another mapping's call by one call of each, not by the burst. The
 * one that runs next is named in the answer before it (ResultMessage.next); with none waiting,
 * the next call received runs at once: the server follows the same order and times that call.
 */
const waiting = createLanes<Received>();
let running: Received | undefined;
// Calls run back to back without the event loop reading new ones for at most about this long
// (a yield per call cost the bench's quick transform a few per cent).
const READ_AFTER_MS = 1;
let lastRead = 0;
const answers = new Socket({ fd: 3, readable: false, writable: true });
answers.on('error', () => process.exit(0));

function send(message: FromSandbox): void {
  answers.write(encodeFrame(message));
}

const modules = createProcessModules({ isolate: () => isolate, limits: () => limits, send });

function newIsolate(): ivm.Isolate {
  return new ivm.Isolate({
    memoryLimit: limits.memoryLimitMb,
    // Past this point the isolate's state is undefined: end the process, the supervisor restarts it.
    onCatastrophicError: () => process.abort(),
  });
}

/**
 * Throw the isolate away and build everything again (recycling, or after a memory kill). The
 * server is told when it starts and ends: the calls waiting meanwhile have not started, so their
 * deadlines wait too, and each module's load is timed on its own (supervisor.ts).
 */
function rebuild(): void {
  if (recycling) return;
  recycling = true;
  ready = (async () => {
    // Calls in flight finish in the old isolate first (unless it is already gone).
    if (inflight > 0 && !isolate.isDisposed)
      await new Promise<void>((resolve) => idleWaiters.push(resolve));
    send({ type: 'rebuilding' });
    modules.clear();
    if (!isolate.isDisposed) isolate.dispose();
    isolate = newIsolate();
    calls = 0;
    lastHeapRebuild = performance.now();
    for (const { key, message } of await modules.loadAll(specs))
      send({ type: 'log', key, level: 'error', message: cutMessage(`reload failed: ${message}`) });
    send({ type: 'rebuilt' });
    recycling = false;
  })().catch(() => {
    // No isolate to run calls in: the supervisor replaces the process (and sends its calls again).
    process.exit(1);
  });
}

/**
 * Rebuilds for a heap left above the threshold, at most one per this many ms: a module whose
 * every call leaves a big heap otherwise made the process reload every module after each of
 * its calls, the other mappings' calls waiting for each reload. The isolate's memory limit
 * still bounds the heap meanwhile.
 */
const HEAP_REBUILD_SPACING_MS = 5_000;
let lastHeapRebuild = Number.NEGATIVE_INFINITY;

/**
 * Why a call into the isolate threw. The runner catches everything the transform throws
 * (isolate-scripts.ts), so what arrives here is isolated-vm's own, or a rejection the
 * transform left unhandled (whose message it chose: never taken as a timeout alone).
 */
function classify(err: unknown, elapsedMs: number): { kind: FailureKind; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (isolate.isDisposed) return { kind: 'memory', message: 'the transform ran out of memory' };
  // A rejection nothing handled is copied out with the transform's own message, which can say
  // "timed out": a timeout is only one that took the time (CPU time never exceeds wall time).
  if (/timed out/i.test(message) && elapsedMs >= limits.cpuTimeoutMs)
    return { kind: 'timeout', message: 'the transform exceeded its CPU time' };
  return { kind: 'threw', message: cutMessage(message) };
}

/** What the runner returned in place of output: a failure, or undefined for output. */
function runnerFailure(
  loaded: Loaded,
  result: unknown,
): { kind: FailureKind; message: string } | undefined {
  // The runner cuts at maxOutputBytes UTF-16 units (never more than the UTF-8 bytes, and all
  // it can count cheaply): the bytes themselves are counted here, out of the transform's reach.
  if (
    result === OUTPUT_TOO_LARGE ||
    (typeof result === 'string' && overUtf8Bytes(result, limits.maxOutputBytes))
  )
    return { kind: 'output', message: `the output is larger than ${limits.maxOutputBytes} bytes` };
  if (result !== THREW) return undefined;
  // A closure's string: nothing of the transform runs to read it.
  const reason = loaded.reason.applySync(undefined, [], { timeout: 50 }) as unknown;
  return { kind: 'threw', message: cutMessage(typeof reason === 'string' ? reason : 'threw') };
}

/** The console lines of the call, or undefined when the drain was tampered with. */
function drainConsole(
  loaded: Loaded,
): { console: ConsoleLine[]; droppedLines: number } | undefined {
  try {
    return checkDrain(loaded.drain.applySync(undefined, [], { timeout: 50 }) as unknown);
  } catch {
    return undefined;
  }
}

/** Answer the running call, naming the one that runs next (picked now: the server times it from its answer). */
function answerRunning(result: ResultMessage): void {
  running = waiting.take();
  send(running ? { ...result, next: running.id } : result);
}

async function call({ id, key, input }: Received): Promise<void> {
  await ready;
  inflight++;
  try {
    const result = await runCall(id, key, input).catch((err: unknown) =>
      failed(id, 'threw', cutMessage((err as Error).message)),
    );
    // Synchronous transforms hold the event loop: once they held it a while, the calls sent
    // meanwhile are read first, so the next call is picked among them too.
    if (performance.now() - lastRead >= READ_AFTER_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      lastRead = performance.now();
    }
    answerRunning(result);
  } finally {
    inflight--;
    if (inflight === 0) for (const resolve of idleWaiters.splice(0)) resolve();
  }
  calls++;
  if (isolate.isDisposed || calls >= limits.recycleAfterCalls || heapRebuildDue()) rebuild();
}

/** Run calls one after the other from `first`, each next one as its predecessor's answer named it. */
async function runFrom(first: Received): Promise<void> {
  for (let current: Received | undefined = first; current; current = running) {
    const at = current;
    // What throws before the answer (the wait for the isolate) fails the call; what throws after
    // it must not answer again (that would take, and lose, the call named next).
    await call(at).catch((err: unknown) => {
      if (running === at) answerRunning(failed(at.id, 'threw', cutMessage((err as Error).message)));
    });
  }
}

function heapRebuildDue(): boolean {
  if (performance.now() - lastHeapRebuild < HEAP_REBUILD_SPACING_MS) return false;
  return isolate.getHeapStatisticsSync().used_heap_size > limits.recycleAboveHeapMb * MB;
}

function failed(id: number, kind: FailureKind, message: string): ResultMessage {
  return { type: 'result', id, failure: { kind, message }, console: [], droppedLines: 0 };
}

async function runCall(id: number, key: string, input: string): Promise<ResultMessage> {
  const current = modules.get(key);
  if (!current) return failed(id, 'unavailable', 'module not loaded');
  const loaded = await modules.refresh(current);
  if ('refused' in loaded) return failed(id, 'unavailable', 'module refused');
  let output: string | undefined;
  let failure: { kind: FailureKind; message: string } | undefined;
  const began = performance.now();
  try {
    // A synchronous transform is one applySync (no thread hop); an async one is then awaited.
    // A transform that parsed JSON holding an escaped key leaves V8's parser in its context
    // renaming escaped keys of later inputs (another sender's, README Decisions). An input with
    // an escape anywhere goes in as a copy of the value, parsed here (the server's text holds no
    // key with a backslash); one without any, whose keys are as written, goes in as text for the
    // context to parse (a copy costs about a tenth of a transform call).
    const value = input.includes('\\')
      ? new ivm.ExternalCopy(JSON.parse(input)).copyInto({ release: true })
      : input;
    let result = loaded.start.applySync(
      undefined,
      [loaded.fn.derefInto(), value, limits.maxOutputBytes],
      { timeout: limits.cpuTimeoutMs, result: { copy: true } },
    ) as unknown;
    if (result === PENDING) {
      result = await loaded.settle.apply(undefined, [], {
        timeout: limits.cpuTimeoutMs,
        result: { promise: true, copy: true },
      });
    }
    failure = runnerFailure(loaded, result);
    if (!failure) {
      if (result !== undefined && typeof result !== 'string')
        throw new Error('output is not JSON text');
      output = result;
    }
  } catch (err) {
    failure = classify(err, performance.now() - began);
    output = undefined;
  }
  if (isolate.isDisposed)
    return failed(id, failure?.kind ?? 'memory', failure?.message ?? 'disposed');
  const logs = drainConsole(loaded);
  if (!logs) return failed(id, 'threw', 'the console of the transform was tampered with');
  return {
    type: 'result',
    id,
    ...(output !== undefined && { output }),
    ...(failure && { failure }),
    ...logs,
  };
}

function onCommand(message: ToSandbox): void {
  if (message.type === 'load') {
    limits = message.limits;
    specs = message.modules;
    for (const { key, files } of message.sources ?? []) modules.hold(key, files);
    isolate = newIsolate();
    ready = modules.loadAll(specs).then((errors) => send({ type: 'loaded', errors }));
  } else if (message.type === 'adopt') {
    const { key, files } = message;
    modules.hold(key, files);
  } else {
    const { id, key, input } = message;
    if (running) waiting.push({ id, key, input });
    else {
      running = { id, key, input };
      void runFrom(running);
    }
  }
}

// Commands from the server (trusted, but still framed and capped).
const commands = new FrameReader(1024 * MB);
process.stdin.on('data', (chunk: Buffer) => {
  lastRead = performance.now();
  const batch = commands.push(chunk);
  for (const text of batch.frames) onCommand(JSON.parse(text) as ToSandbox);
  if (batch.error) process.exit(1);
});
// The server went away: nothing left to serve.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
