/**
 * Inside the transform process: its modules, each a warm context in the
 * current isolate. A module is compiled from its last good sources where it
 * has them (the server's copy at start, then each good compile, and the
 * newer versions the server hands over), else from disk with containment
 * checked on every read; recompiled when its files change on disk; a broken
 * edit keeps the last good version; a file that leads outside the root
 * refuses the module (nothing of it runs, nothing of it is kept). Each good
 * compile from disk is reported to the server, which keeps the text. A module
 * is recompiled after edits at most RECOMPILES_PER_MODULE_PER_MINUTE times a
 * minute: the server counts the reports, and takes a process over its count
 * for a liar (a file touched in a loop once had the honest process killed,
 * and every mapping's calls in it failed).
 */
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type ivm from 'isolated-vm';
import { CONSOLE_BOOTSTRAP, lockdownScript, RUNNERS } from './isolate-scripts.ts';
import {
  MAX_MODULE_BYTES,
  readContained,
  realRootOf,
  signatureOf,
  tooLargeError,
} from './module-files.ts';
import { createLogBudget } from './log-budget.ts';
import { ContainmentError, MODULE_EXTENSIONS, resolveContained } from './paths.ts';
import {
  cutMessage,
  type FromSandbox,
  type LoadError,
  MAX_REPORTED_FILES,
  type ModuleSpec,
  RECOMPILES_PER_MODULE_PER_MINUTE,
  type SandboxLimits,
  type SourceFile,
} from './protocol.ts';

/** A module compiled and ready to call. */
export type Loaded = {
  spec: ModuleSpec;
  context: ivm.Context;
  fn: ivm.Reference;
  start: ivm.Reference;
  settle: ivm.Reference;
  /** The text of the call's failure, when start or settle said it threw. */
  reason: ivm.Reference;
  drain: ivm.Reference;
  /** Every file of the module graph with the signature it was compiled from. */
  files: Map<string, string>;
  /** The version that runs: `files` as compiled (`files` later also notes a failed edit). */
  version: ReadonlyMap<string, string>;
};

/** A module whose files lead outside the root: nothing of it runs until that changes. */
export type Refused = { spec: ModuleSpec; refused: string; files: Map<string, string> };

/** Files by path as last compiled: signature and text (before type stripping). */
type Sources = Map<string, { signature: string; code: string }>;

export type ProcessModules = {
  /** The module `key` as loaded (or refused), undefined when it is not one of the specs. */
  get(key: string): Loaded | Refused | undefined;
  /** Load every spec into the current isolate (from last good sources where held); the errors. */
  loadAll(specs: readonly ModuleSpec[]): Promise<LoadError[]>;
  /** The module as it should run now: recompiled if its files changed on disk. */
  refresh(current: Loaded | Refused): Promise<Loaded | Refused>;
  /** Keep `files` as the last good sources of `key` (the server's copy, or another process's version). */
  hold(key: string, files: readonly SourceFile[]): void;
  /** Release every context (before the isolate is thrown away); the last good sources stay. */
  clear(): void;
};

/** The module set of the process: `isolate` and `limits` are read when a module is compiled. */
export function createProcessModules(deps: {
  isolate: () => ivm.Isolate;
  limits: () => SandboxLimits;
  send: (message: FromSandbox) => void;
}): ProcessModules {
  const { isolate, limits, send } = deps;
  const modules = new Map<string, Loaded | Refused>();
  const lastGood = new Map<string, Sources>();
  const recompiles = createLogBudget(RECOMPILES_PER_MODULE_PER_MINUTE, (key, deferred) =>
    send({
      type: 'log',
      key,
      level: 'warn',
      message: `module changed on disk more often than ${RECOMPILES_PER_MODULE_PER_MINUTE} times a minute: ${deferred} changes were picked up later`,
    }),
  );

  /**
   * Compile a module from `held` sources where it has the file, else from disk (containment
   * checked on the read), or, `heldOnly`, not at all; what was compiled is recorded in `used`.
   */
  async function loadModule(
    spec: ModuleSpec,
    files: Map<string, string>,
    held: Sources | undefined,
    used: Sources,
    heldOnly: boolean,
  ): Promise<Loaded> {
    // Known before anything is checked: a refused entry is retried once it changes on disk.
    files.set(spec.file, held?.get(spec.file)?.signature ?? signatureOf(spec.file));
    const context = await isolate().createContext();
    try {
      await context.eval(lockdownScript(limits().allowWebAssembly));
      const drain = (await context.eval(CONSOLE_BOOTSTRAP, { reference: true })) as ivm.Reference;
      const runners = (await context.eval(RUNNERS, { reference: true })) as ivm.Reference;
      const start = runners.getSync(0, { reference: true }) as ivm.Reference;
      const settle = runners.getSync(1, { reference: true }) as ivm.Reference;
      const reason = runners.getSync(2, { reference: true }) as ivm.Reference;
      runners.release();
      const fileOf = new Map<ivm.Module, string>();
      const compiled = new Map<string, ivm.Module>();
      let bytes = 0;
      const compile = async (file: string): Promise<ivm.Module> => {
        const cached = compiled.get(file);
        if (cached) return cached;
        if (!MODULE_EXTENSIONS.has(path.extname(file))) {
          throw new Error(`${file}: only .js, .mjs, .ts and .mts modules can be loaded`);
        }
        const source = held?.get(file) ?? (heldOnly ? notHeld(file) : readFile(spec, file));
        files.set(file, source.signature);
        used.set(file, source);
        bytes += Buffer.byteLength(source.code);
        if (bytes > MAX_MODULE_BYTES) throw tooLargeError(`module "${spec.file}" with its imports`);
        const module = await isolate().compileModule(stripped(file, source.code), {
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
      await entry.evaluate({ timeout: limits().cpuTimeoutMs * 4 });
      const fn = await exportedFunction(entry, spec.exportName);
      return { spec, context, fn, start, settle, reason, drain, files, version: new Map(files) };
    } catch (err) {
      context.release();
      throw err;
    }
  }

  /**
   * Load one module: from disk, from its last good sources where they have a file (`held`), or
   * from them alone (`heldOnly`); a path that leads outside the root leaves it refused (nothing
   * of it runs, and nothing of it is kept).
   */
  async function loadOrRefuse(
    spec: ModuleSpec,
    from: 'disk' | 'held' | 'heldOnly',
  ): Promise<Loaded | Refused> {
    const files = new Map<string, string>();
    const held = from === 'disk' ? undefined : lastGood.get(spec.key);
    const used: Sources = new Map();
    try {
      const loaded = await loadModule(spec, files, held, used, from === 'heldOnly');
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
    // Refused again with nothing kept (each rebuild loads a refused module from disk): nothing
    // new to tell, and a report per rebuild would spend the report budget (process-link.ts).
    if (!sources && !lastGood.has(key)) return;
    if (sources) lastGood.set(key, sources);
    else lastGood.delete(key);
    const files = [...(sources ?? [])].map(([file, { signature }]) => ({ file, signature }));
    // A graph too large to report is not kept by the server: a restart then reads the disk.
    send({ type: 'compiled', key, files: files.length > MAX_REPORTED_FILES ? [] : files });
  }

  /**
   * What runs after a broken edit: the module as loaded, unless another process compiled a
   * newer good version since (handed over by the server), which is compiled from its text.
   */
  async function lastGoodOf(current: Loaded | Refused): Promise<Loaded | Refused> {
    const held = lastGood.get(current.spec.key);
    if (!('context' in current) || !held || sameVersion(held, current.version)) return current;
    try {
      // Only the text handed over: with a file of it missing, a mix of it and the disk would be a
      // version nobody compiled (a lying process can report part of a graph).
      const adopted = await loadOrRefuse(current.spec, 'heldOnly');
      current.context.release();
      modules.set(current.spec.key, adopted);
      return adopted;
    } catch {
      return current;
    }
  }

  return {
    get: (key) => modules.get(key),
    async loadAll(specs) {
      const errors: LoadError[] = [];
      for (const spec of specs) {
        send({ type: 'loading', key: spec.key });
        try {
          const loaded = await loadOrRefuse(spec, 'held');
          modules.set(spec.key, loaded);
          if ('refused' in loaded)
            errors.push({ key: spec.key, message: cutMessage(`refused: ${loaded.refused}`) });
        } catch (err) {
          errors.push({ key: spec.key, message: cutMessage((err as Error).message) });
        }
      }
      return errors;
    },
    async refresh(current) {
      let changed = false;
      for (const [file, signature] of current.files)
        if (signatureOf(file) !== signature) changed = true;
      if (!changed) return current;
      const key = current.spec.key;
      // Over the budget: the version that runs stays; the edit is seen at a later call.
      if (!recompiles.take(key, Date.now())) return current;
      try {
        const fresh = await loadOrRefuse(current.spec, 'disk');
        if ('context' in current) current.context.release();
        modules.set(key, fresh);
        if ('refused' in fresh) {
          const message = cutMessage(`module changed on disk and is refused: ${fresh.refused}`);
          send({ type: 'log', key, level: 'error', message });
        } else
          send({ type: 'log', key, level: 'info', message: 'module changed on disk: recompiled' });
        return fresh;
      } catch (err) {
        const kept = await lastGoodOf(current);
        // Remember the failed edit's signatures so it is not retried on every call.
        for (const file of kept.files.keys()) kept.files.set(file, signatureOf(file));
        const message = cutMessage(
          `module changed on disk but does not load (${(err as Error).message}); keeping the last good version`,
        );
        send({ type: 'log', key, level: 'warn', message });
        return kept;
      }
    },
    hold(key, files) {
      lastGood.set(
        key,
        new Map(files.map(({ file, signature, code }) => [file, { signature, code }])),
      );
    },
    clear() {
      for (const loaded of modules.values())
        if ('context' in loaded && !isolate().isDisposed) loaded.context.release();
      modules.clear();
    },
  };
}

function notHeld(file: string): never {
  throw new Error(`${file} is not in the version handed over`);
}

function sameVersion(held: Sources, version: ReadonlyMap<string, string>): boolean {
  if (held.size !== version.size) return false;
  for (const [file, { signature }] of held) if (version.get(file) !== signature) return false;
  return true;
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
