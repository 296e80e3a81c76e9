/**
 * The transform process: a child of the server that runs operator-supplied
 * transform modules in isolated-vm. One isolate with a memory limit, one warm
 * context per module (a context per call leaks), a CPU timeout on every call,
 * JSON strings in and out, nothing of the host reachable from inside. The
 * isolate is rebuilt after N calls, above a heap threshold, or when disposed.
 * Some allocations defeat isolated-vm's own limits; that is why this runs in a
 * process the server can kill (supervisor.ts). Run with --no-node-snapshot.
 */
import { readFileSync, statSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import ivm from 'isolated-vm';
import { isInside, MODULE_EXTENSIONS, resolveContained } from './paths.ts';
import type {
  ConsoleLine,
  FailureKind,
  FromSandbox,
  ModuleSpec,
  SandboxLimits,
  ToSandbox,
} from './protocol.ts';

type Loaded = {
  spec: ModuleSpec;
  context: ivm.Context;
  fn: ivm.Reference;
  runner: ivm.Reference;
  drain: ivm.Reference;
  /** Every file of the module graph with the mtime it was compiled from. */
  files: Map<string, number>;
};

const MB = 1024 * 1024;
const MAX_LINES_PER_CALL = 20;

// Inside the isolate: a console that only collects text, drained by the host after each call.
const CONSOLE_BOOTSTRAP = `(() => {
  const lines = [];
  let dropped = 0;
  const show = (value) => {
    if (typeof value === 'string') return value;
    try { return JSON.stringify(value) ?? String(value); } catch { return String(value); }
  };
  const collect = (level) => (...args) => {
    if (lines.length < ${MAX_LINES_PER_CALL}) lines.push({ level, text: args.map(show).join(' ').slice(0, 1000) });
    else dropped++;
  };
  globalThis.console = Object.freeze({
    log: collect('info'), info: collect('info'), debug: collect('debug'),
    warn: collect('warn'), error: collect('error'),
  });
  return () => {
    const out = JSON.stringify({ lines, dropped });
    lines.length = 0;
    dropped = 0;
    return out;
  };
})()`;

// Inside the isolate: parse the input, await the transform, serialise its result.
const RUNNER = `(async (fn, input, maxBytes) => {
  const result = await fn(JSON.parse(input));
  if (result === undefined) return undefined;
  const text = JSON.stringify(result);
  if (typeof text !== 'string') return undefined;
  if (text.length > maxBytes) throw new Error('hookgate:output-too-large');
  return text;
})`;

let limits: SandboxLimits;
let specs: ModuleSpec[] = [];
let isolate: ivm.Isolate;
let calls = 0;
const modules = new Map<string, Loaded>();
// Resolves when the isolate and modules are (re)built; calls wait on it.
let ready: Promise<void> = Promise.resolve();
// Calls running in the current isolate, and who waits for them to end before a rebuild.
let inflight = 0;
let recycling = false;
const idleWaiters: Array<() => void> = [];

function send(message: FromSandbox): void {
  process.send?.(message);
}

function newIsolate(): ivm.Isolate {
  return new ivm.Isolate({
    memoryLimit: limits.memoryLimitMb,
    // Past this point the isolate's state is undefined: end the process, the supervisor restarts it.
    onCatastrophicError: () => process.abort(),
  });
}

/** Read a module's source, stripping TypeScript types (no loader, no precompile). */
function readSource(file: string): string {
  const code = readFileSync(file, 'utf8');
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

async function loadModule(spec: ModuleSpec): Promise<Loaded> {
  const context = await isolate.createContext();
  try {
    const drain = (await context.eval(CONSOLE_BOOTSTRAP, { reference: true })) as ivm.Reference;
    const runner = (await context.eval(RUNNER, { reference: true })) as ivm.Reference;
    const files = new Map<string, number>();
    const fileOf = new Map<ivm.Module, string>();
    const compiled = new Map<string, ivm.Module>();
    const compile = async (file: string): Promise<ivm.Module> => {
      const cached = compiled.get(file);
      if (cached) return cached;
      if (!MODULE_EXTENSIONS.has(path.extname(file))) {
        throw new Error(`${file}: only .js, .mjs, .ts and .mts modules can be loaded`);
      }
      files.set(file, statSync(file).mtimeMs);
      const module = await isolate.compileModule(readSource(file), {
        filename: pathToFileURL(file).href,
      });
      compiled.set(file, module);
      fileOf.set(module, file);
      return module;
    };
    if (!isInside(spec.root, spec.file))
      throw new Error(`${spec.file} is outside the transforms root`);
    const entry = await compile(spec.file);
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
    return { spec, context, fn, runner, drain, files };
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

async function loadAll(): Promise<Array<{ key: string; message: string }>> {
  const errors: Array<{ key: string; message: string }> = [];
  for (const spec of specs) {
    try {
      modules.set(spec.key, await loadModule(spec));
    } catch (err) {
      errors.push({ key: spec.key, message: (err as Error).message });
    }
  }
  return errors;
}

/** Throw the isolate away and build everything again (recycling, or after a memory kill). */
function rebuild(): void {
  if (recycling) return;
  recycling = true;
  ready = (async () => {
    // Calls in flight finish in the old isolate first (unless it is already gone).
    if (inflight > 0 && !isolate.isDisposed)
      await new Promise<void>((resolve) => idleWaiters.push(resolve));
    for (const loaded of modules.values()) if (!isolate.isDisposed) loaded.context.release();
    modules.clear();
    if (!isolate.isDisposed) isolate.dispose();
    isolate = newIsolate();
    calls = 0;
    for (const { key, message } of await loadAll())
      send({ type: 'log', key, level: 'error', message: `reload failed: ${message}` });
    recycling = false;
  })();
}

/** Recompile a module whose files changed; a broken edit keeps the last good version. */
async function refresh(loaded: Loaded): Promise<Loaded> {
  let changed = false;
  for (const [file, mtime] of loaded.files) {
    try {
      if (statSync(file).mtimeMs !== mtime) changed = true;
    } catch {
      changed = true;
    }
  }
  if (!changed) return loaded;
  try {
    const fresh = await loadModule(loaded.spec);
    loaded.context.release();
    modules.set(loaded.spec.key, fresh);
    send({
      type: 'log',
      key: loaded.spec.key,
      level: 'info',
      message: 'module changed on disk: recompiled',
    });
    return fresh;
  } catch (err) {
    // Remember the failed edit's mtimes so it is not retried on every call.
    for (const file of loaded.files.keys()) {
      try {
        loaded.files.set(file, statSync(file).mtimeMs);
      } catch {
        // A deleted file: keep the old version until it comes back.
      }
    }
    const message = `module changed on disk but does not load (${(err as Error).message}); keeping the last good version`;
    send({ type: 'log', key: loaded.spec.key, level: 'warn', message });
    return loaded;
  }
}

function classify(err: unknown): { kind: FailureKind; message: string } {
  const message = err instanceof Error ? err.message : String(err);
  if (isolate.isDisposed) return { kind: 'memory', message: 'the transform ran out of memory' };
  if (/timed out/i.test(message))
    return { kind: 'timeout', message: 'the transform exceeded its CPU time' };
  if (message.includes('hookgate:output-too-large')) {
    return { kind: 'output', message: `the output is larger than ${limits.maxOutputBytes} bytes` };
  }
  return { kind: 'threw', message };
}

function drainConsole(loaded: Loaded): { console: ConsoleLine[]; droppedLines: number } {
  try {
    const text = loaded.drain.applySync(undefined, [], { timeout: 50 }) as string;
    const { lines, dropped } = JSON.parse(text) as { lines: ConsoleLine[]; dropped: number };
    return { console: lines, droppedLines: dropped };
  } catch {
    return { console: [], droppedLines: 0 };
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

async function runCall(id: number, key: string, input: string): Promise<void> {
  const current = modules.get(key);
  if (!current) {
    send({
      type: 'result',
      id,
      failure: { kind: 'unavailable', message: 'module not loaded' },
      console: [],
      droppedLines: 0,
    });
    return;
  }
  const loaded = await refresh(current);
  let output: string | undefined;
  let failure: { kind: FailureKind; message: string } | undefined;
  try {
    output = (await loaded.runner.apply(
      undefined,
      [loaded.fn.derefInto(), input, limits.maxOutputBytes],
      {
        timeout: limits.cpuTimeoutMs,
        result: { promise: true, copy: true },
      },
    )) as string | undefined;
  } catch (err) {
    failure = classify(err);
  }
  const logs = isolate.isDisposed ? { console: [], droppedLines: 0 } : drainConsole(loaded);
  send({
    type: 'result',
    id,
    ...(output !== undefined && { output }),
    ...(failure && { failure }),
    ...logs,
  });
}

process.on('message', (message: ToSandbox) => {
  if (message.type === 'load') {
    limits = message.limits;
    specs = message.modules;
    isolate = newIsolate();
    ready = loadAll().then((errors) => send({ type: 'loaded', errors }));
  } else {
    call(message.id, message.key, message.input).catch((err: unknown) => {
      const failure = { kind: 'threw' as const, message: (err as Error).message };
      send({ type: 'result', id: message.id, failure, console: [], droppedLines: 0 });
    });
  }
});

// The server went away: nothing left to serve.
process.on('disconnect', () => process.exit(0));
