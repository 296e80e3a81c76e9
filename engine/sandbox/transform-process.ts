/**
 * The transform process: a child of the server that runs operator-supplied
 * transform modules in isolated-vm. One isolate with a memory limit, one warm
 * context per module (a context per call leaks), a CPU timeout on every call,
 * JSON strings in and out, nothing of the host reachable from inside. The
 * isolate is rebuilt after N calls, above a heap threshold, or when disposed.
 * Each module's last good sources are kept (here, and by the server for a
 * restart): a rebuild compiles those, not a broken edit on disk.
 * Some allocations defeat isolated-vm's own limits; that is why this runs in a
 * process the server can kill (supervisor.ts). Commands arrive as frames on
 * stdin, answers leave as frames on fd 3. Run with --no-node-snapshot.
 */
import { Socket } from 'node:net';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ivm from 'isolated-vm';
import { checkDrain } from './console-drain.ts';
import { encodeFrame, FrameReader } from './frames.ts';
import { CONSOLE_BOOTSTRAP, lockdownScript, PENDING, RUNNERS } from './isolate-scripts.ts';
import { readContained, realRootOf, signatureOf } from './module-files.ts';
import { ContainmentError, MODULE_EXTENSIONS, resolveContained } from './paths.ts';
import {
  type ConsoleLine,
  type FailureKind,
  type FromSandbox,
  MAX_REPORTED_FILES,
  MESSAGE_CHARS,
  type ModuleSpec,
  type SandboxLimits,
  type SourceFile,
  type ToSandbox,
} from './protocol.ts';

type Loaded = {
  spec: ModuleSpec;
  context: ivm.Context;
  fn: ivm.Reference;
  start: ivm.Reference;
  settle: ivm.Reference;
  drain: ivm.Reference;
  /** Every file of the module graph with the signature it was compiled from. */
  files: Map<string, string>;
  /** The version that runs: `files` as compiled (`files` later also notes a failed edit). */
  version: ReadonlyMap<string, string>;
};

/** Files by path as last compiled: signature and text (before type stripping). */
type Sources = Map<string, { signature: string; code: string }>;

/** A module whose files lead outside the root: nothing of it runs until that changes. */
type Refused = { spec: ModuleSpec; refused: string; files: Map<string, string> };

const MB = 1024 * 1024;

let limits: SandboxLimits;
let specs: ModuleSpec[] = [];
let isolate: ivm.Isolate;
let calls = 0;
const modules = new Map<string, Loaded | Refused>();
// The last good sources of each module (the server's copy at start, then each good compile).
const lastGood = new Map<string, Sources>();
// Resolves when the isolate and modules are (re)built; calls wait on it.
let ready: Promise<void> = Promise.resolve();
// Calls running in the current isolate, and who waits for them to end before a rebuild.
let inflight = 0;
let recycling = false;
const idleWaiters: Array<() => void> = [];
const answers = new Socket({ fd: 3, readable: false, writable: true });
answers.on('error', () => process.exit(0));

function send(message: FromSandbox): void {
  answers.write(encodeFrame(message));
}

function newIsolate(): ivm.Isolate {
  return new ivm.Isolate({
    memoryLimit: limits.memoryLimitMb,
    // Past this point the isolate's state is undefined: end the process, the supervisor restarts it.
    onCatastrophicError: () => process.abort(),
  });
}

/** TypeScript types stripped from a module file's text (other files as they are). */
function stripped(file: string, code: string): string {
  const ext = path.extname(file);
  if (ext !== '.ts' && ext !== '.mts') return code;
  try {
    return stripTypeScriptTypes(code, { mode: 'strip', sourceUrl: file });
  } catch (err) {
    // The first stack line is "<file>:<line>".
    const where = String((err as Error).stack ?? '').split('\n')[0] ?? file;
    throw new Error(`${where}: TypeScript: ${(err as Error).message}`);
  }
}

/**
 * Compile a module from `held` sources where it has the file, else from disk (containment
 * checked on the read); what was compiled is recorded in `used`.
 */
async function loadModule(
  spec: ModuleSpec,
  files: Map<string, string>,
  held: Sources | undefined,
  used: Sources,
): Promise<Loaded> {
  // Known before anything is checked: a refused entry is retried once it changes on disk.
  files.set(spec.file, held?.get(spec.file)?.signature ?? signatureOf(spec.file));
  const context = await isolate.createContext();
  try {
    await context.eval(lockdownScript(limits.allowWebAssembly));
    const drain = (await context.eval(CONSOLE_BOOTSTRAP, { reference: true })) as ivm.Reference;
    const runners = (await context.eval(RUNNERS, { reference: true })) as ivm.Reference;
    const start = runners.getSync(0, { reference: true }) as ivm.Reference;
    const settle = runners.getSync(1, { reference: true }) as ivm.Reference;
    runners.release();
    const fileOf = new Map<ivm.Module, string>();
    const compiled = new Map<string, ivm.Module>();
    const compile = async (file: string): Promise<ivm.Module> => {
      const cached = compiled.get(file);
      if (cached) return cached;
      if (!MODULE_EXTENSIONS.has(path.extname(file))) {
        throw new Error(`${file}: only .js, .mjs, .ts and .mts modules can be loaded`);
      }
      const source = held?.get(file) ?? readFile(spec, file);
      files.set(file, source.signature);
      used.set(file, source);
      const module = await isolate.compileModule(stripped(file, source.code), {
        filename: pathToFileURL(file).href,
      });
      compiled.set(file, module);
      fileOf.set(module, file);
      return module;
    };
    const entry = await compile(
      resolveContained(spec.root, spec.root, path.relative(spec.root, spec.file), {
        allowParent: true,
      }),
    );
    await entry.instantiate(context, async (specifier, referrer) => {
      if (!specifier.startsWith('./') && !specifier.startsWith('../')) {
        throw new Error(
          `import "${specifier}" is not allowed: only relative imports inside the transforms root`,
        );
      }
      const from = path.dirname(fileOf.get(referrer) ?? spec.file);
      return compile(resolveContained(spec.root, from, specifier, { allowParent: true }));
    });
    await entry.evaluate({ timeout: limits.cpuTimeoutMs * 4 });
    const fn = await exportedFunction(entry, spec.exportName);
    return { spec, context, fn, start, settle, drain, files, version: new Map(files) };
  } catch (err) {
    context.release();
    throw err;
  }
}

/** The named export, else `default`, else `transform`; it must be a function. */
async function exportedFunction(
  entry: ivm.Module,
  name: string | undefined,
): Promise<ivm.Reference> {
  const namespace = entry.namespace;
  for (const candidate of name ? [name] : ['default', 'transform']) {
    const ref = (await namespace.get(candidate, { reference: true })) as ivm.Reference;
    if (ref.typeof === 'function') return ref;
    if (name || ref.typeof !== 'undefined')
      throw new Error(`export "${candidate}" is not a function`);
  }
  throw new Error('the module exports neither a default function nor "transform"');
}

/** A file's signature, then its text: an edit between the two is seen as a change later. */
function readFile(spec: ModuleSpec, file: string): { signature: string; code: string } {
  const signature = signatureOf(file);
  return { signature, code: readContained(spec.realRoot ?? realRootOf(spec.root), file) };
}

/**
 * Load one module (from its last good sources when `fromHeld`); a path that leads outside the
 * root leaves it refused (nothing of it runs, and nothing of it is kept).
 */
async function loadOrRefuse(spec: ModuleSpec, fromHeld: boolean): Promise<Loaded | Refused> {
  const files = new Map<string, string>();
  const held = fromHeld ? lastGood.get(spec.key) : undefined;
  const used: Sources = new Map();
  try {
    const loaded = await loadModule(spec, files, held, used);
    // Compiled from disk, at least in part: these are now the last good sources.
    if ([...used].some(([file, source]) => held?.get(file) !== source)) keep(spec.key, used);
    return loaded;
  } catch (err) {
    if (!(err instanceof ContainmentError)) throw err;
    keep(spec.key, undefined);
    return { spec, refused: err.message, files };
  }
}

/** Keep a module's sources (undefined: none) and tell the server which files they are. */
function keep(key: string, sources: Sources | undefined): void {
  if (sources) lastGood.set(key, sources);
  else lastGood.delete(key);
  const files = [...(sources ?? [])].map(([file, { signature }]) => ({ file, signature }));
  // A graph too large to report is not kept by the server: a restart then reads the disk.
  send({ type: 'compiled', key, files: files.length > MAX_REPORTED_FILES ? [] : files });
}

async function loadAll(): Promise<Array<{ key: string; message: string }>> {
  const errors: Array<{ key: string; message: string }> = [];
  for (const spec of specs) {
    try {
      const loaded = await loadOrRefuse(spec, true);
      modules.set(spec.key, loaded);
      if ('refused' in loaded)
        errors.push({ key: spec.key, message: cut(`refused: ${loaded.refused}`) });
    } catch (err) {
      errors.push({ key: spec.key, message: cut((err as Error).message) });
    }
  }
  return errors;
}

function cut(text: string): string {
  return text.length > MESSAGE_CHARS ? text.slice(0, MESSAGE_CHARS) : text;
}

/** Throw the isolate away and build everything again (recycling, or after a memory kill). */
function rebuild(): void {
  if (recycling) return;
  recycling = true;
  ready = (async () => {
    // Calls in flight finish in the old isolate first (unless it is already gone).
    if (inflight > 0 && !isolate.isDisposed)
      await new Promise<void>((resolve) => idleWaiters.push(resolve));
    for (const loaded of modules.values())
      if ('context' in loaded && !isolate.isDisposed) loaded.context.release();
    modules.clear();
    if (!isolate.isDisposed) isolate.dispose();
    isolate = newIsolate();
    calls = 0;
    for (const { key, message } of await loadAll())
      send({ type: 'log', key, level: 'error', message: cut(`reload failed: ${message}`) });
    recycling = false;
  })();
}

/**
 * Recompile a module whose files changed. A broken edit keeps the last good
 * version; a file that now leads outside the root refuses the module outright.
 */
async function refresh(current: Loaded | Refused): Promise<Loaded | Refused> {
  let changed = false;
  for (const [file, signature] of current.files)
    if (signatureOf(file) !== signature) changed = true;
  if (!changed) return current;
  const key = current.spec.key;
  try {
    const fresh = await loadOrRefuse(current.spec, false);
    if ('context' in current) current.context.release();
    modules.set(key, fresh);
    if ('refused' in fresh) {
      const message = cut(`module changed on disk and is refused: ${fresh.refused}`);
      send({ type: 'log', key, level: 'error', message });
    } else send({ type: 'log', key, level: 'info', message: 'module changed on disk: recompiled' });
    return fresh;
  } catch (err) {
    const kept = await lastGoodOf(current);
    // Remember the failed edit's signatures so it is not retried on every call.
    for (const file of kept.files.keys()) kept.files.set(file, signatureOf(file));
    const message = cut(
      `module changed on disk but does not load (${(err as Error).message}); keeping the last good version`,
    );
    send({ type: 'log', key, level: 'warn', message });
    return kept;
  }
}

/**
 * What runs after a broken edit: the module as loaded, unless another process compiled a
 * newer good version since (handed over by the server), which is compiled from its text.
 */
async function lastGoodOf(current: Loaded | Refused): Promise<Loaded | Refused> {
  const held = lastGood.get(current.spec.key);
  if (!('context' in current) || !held || sameVersion(held, current.version)) return current;
  try {
    const adopted = await loadOrRefuse(current.spec, true);
    current.context.release();
    modules.set(current.spec.key, adopted);
    return adopted;
  } catch {
    return current;
  }
}

function sameVersion(held: Sources, version: ReadonlyMap<string, string>): boolean {
  if (held.size !== version.size) return false;
  for (const [file, { signature }] of held) if (version.get(file) !== signature) return false;
  return true;
}

function classify(err: unknown): { kind: FailureKind; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (isolate.isDisposed) return { kind: 'memory', message: 'the transform ran out of memory' };
  if (/timed out/i.test(message))
    return { kind: 'timeout', message: 'the transform exceeded its CPU time' };
  if (message.includes('hookgate:output-too-large')) {
    return { kind: 'output', message: `the output is larger than ${limits.maxOutputBytes} bytes` };
  }
  return { kind: 'threw', message: cut(message) };
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

async function call(id: number, key: string, input: string): Promise<void> {
  await ready;
  inflight++;
  try {
    await runCall(id, key, input);
  } finally {
    inflight--;
    if (inflight === 0) for (const resolve of idleWaiters.splice(0)) resolve();
  }
  calls++;
  const heap = isolate.isDisposed ? 0 : isolate.getHeapStatisticsSync().used_heap_size;
  if (
    isolate.isDisposed ||
    calls >= limits.recycleAfterCalls ||
    heap > limits.recycleAboveHeapMb * MB
  ) {
    rebuild();
  }
}

function fail(id: number, kind: FailureKind, message: string): void {
  send({ type: 'result', id, failure: { kind, message }, console: [], droppedLines: 0 });
}

async function runCall(id: number, key: string, input: string): Promise<void> {
  const current = modules.get(key);
  if (!current) return fail(id, 'unavailable', 'module not loaded');
  const loaded = await refresh(current);
  if ('refused' in loaded) return fail(id, 'unavailable', 'module refused');
  let output: string | undefined;
  let failure: { kind: FailureKind; message: string } | undefined;
  try {
    // A synchronous transform is one applySync (no thread hop); an async one is then awaited.
    let result = loaded.start.applySync(
      undefined,
      [loaded.fn.derefInto(), input, limits.maxOutputBytes],
      { timeout: limits.cpuTimeoutMs, result: { copy: true } },
    ) as unknown;
    if (result === PENDING) {
      result = await loaded.settle.apply(undefined, [], {
        timeout: limits.cpuTimeoutMs,
        result: { promise: true, copy: true },
      });
    }
    output = result as string | undefined;
    if (output !== undefined && typeof output !== 'string')
      throw new Error('output is not JSON text');
  } catch (err) {
    failure = classify(err);
    output = undefined;
  }
  if (isolate.isDisposed)
    return fail(id, failure?.kind ?? 'memory', failure?.message ?? 'disposed');
  const logs = drainConsole(loaded);
  if (!logs) return fail(id, 'threw', 'the console of the transform was tampered with');
  send({
    type: 'result',
    id,
    ...(output !== undefined && { output }),
    ...(failure && { failure }),
    ...logs,
  });
}

function onCommand(message: ToSandbox): void {
  if (message.type === 'load') {
    limits = message.limits;
    specs = message.modules;
    for (const { key, files } of message.sources ?? []) lastGood.set(key, sourcesOf(files));
    isolate = newIsolate();
    ready = loadAll().then((errors) => send({ type: 'loaded', errors }));
  } else if (message.type === 'adopt') {
    const { key, files } = message;
    lastGood.set(key, sourcesOf(files));
  } else {
    const { id, key, input } = message;
    calling = calling.then(() =>
      call(id, key, input).catch((err: unknown) => fail(id, 'threw', cut((err as Error).message))),
    );
  }
}

function sourcesOf(files: readonly SourceFile[]): Sources {
  return new Map(files.map(({ file, signature, code }) => [file, { signature, code }]));
}

/**
 * Calls run one at a time, in the order sent. The isolate runs one at a time anyway, but a
 * call queued in it would hold up the console drain (applySync) of the call before it, so
 * no answer would leave before the whole batch had run, and the server, which times the
 * oldest call, would find it late.
 */
let calling: Promise<void> = Promise.resolve();

// Commands from the server (trusted, but still framed and capped).
const commands = new FrameReader(1024 * MB);
process.stdin.on('data', (chunk: Buffer) => {
  const batch = commands.push(chunk);
  for (const text of batch.frames) onCommand(JSON.parse(text) as ToSandbox);
  if (batch.error) process.exit(1);
});
// The server went away: nothing left to serve.
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
