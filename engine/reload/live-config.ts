/**
 * The running configuration and its reloads: a new configuration is
 * compiled and started beside the current one, then swapped in one step. A
 * configuration that does not compile or whose transforms do not load
 * changes nothing; the reason is kept for /readyz and `hookgate reload`.
 */
import type { LoadedConfig } from '../config.ts';
import { type CompiledConfig, compileConfig } from '../config/compile.ts';
import type { Logger } from '../log.ts';
import type { Generation } from './generation.ts';
import { restartOnlyChanges } from './restart-only.ts';
import { sharedAdminToken } from './running-admin.ts';

export type ReloadOutcome = {
  ok: boolean;
  /** ISO time the reload finished. */
  at: string;
  /** What asked for it: SIGHUP, `hookgate reload`, a file change. */
  trigger: string;
  file: string | null;
  /** Why nothing changed (a config error names its path). */
  error?: string;
  /** Changed settings that wait for a restart (the running values stay). */
  restartNeeded: string[];
  /** What the new configuration may lack though it runs (a runner command not installed yet). */
  warnings?: string[];
};

export type LiveConfig = {
  current(): Generation;
  /** Reload from the config file; reloads run one at a time, in the order asked. */
  reload(trigger: string): Promise<ReloadOutcome>;
  /** The last reload's outcome, if any. */
  lastReload(): ReloadOutcome | undefined;
  /** Wait for a reload in progress, then retire the current generation. */
  close(): Promise<void>;
};

export type LiveConfigDeps = {
  /** Read and validate the config file again (throws or rejects with a ConfigError). */
  load: () => LoadedConfig | Promise<LoadedConfig>;
  /** Start a generation of a compiled config (throws ConfigError when a transform does not load). */
  start: (compiled: CompiledConfig) => Promise<Generation>;
  /** Called with the new generation as it becomes current. */
  swapped: (next: Generation) => void;
  /** Warnings about a configuration that loads (`path: message`), told to whoever reloaded. */
  warningsOf?: (compiled: CompiledConfig) => string[];
  logger: Logger;
};

export function createLiveConfig(first: Generation, deps: LiveConfigDeps): LiveConfig {
  let current = first;
  // What the process runs with until a restart: restart-only changes are measured against it.
  const boot = first.compiled.loaded.config;
  let last: ReloadOutcome | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let waiting: Promise<ReloadOutcome> | undefined;
  let closed = false;

  async function reloadNow(trigger: string): Promise<ReloadOutcome> {
    const running = current.compiled.loaded;
    const base = { trigger, file: running.file };
    if (closed) return finish({ ...base, ok: false, error: 'shutting down', restartNeeded: [] });
    if (!running.file) {
      // Not recorded as a failed reload: nothing was tried, and readiness stays as it was.
      deps.logger.warn({ trigger }, 'reload ignored: the quickstart has no config file');
      return {
        ...base,
        ok: false,
        error: 'the quickstart has no config file to reload',
        restartNeeded: [],
        at: new Date().toISOString(),
      };
    }
    let next: Generation;
    try {
      const loaded = await deps.load();
      const shared = sharedAdminToken(boot, loaded.config);
      if (shared) return finish({ ...base, ok: false, error: shared, restartNeeded: [] });
      next = await deps.start(compileConfig(loaded));
    } catch (err) {
      return finish({ ...base, ok: false, error: (err as Error).message, restartNeeded: [] });
    }
    const restartNeeded = restartOnlyChanges(boot, next.compiled.loaded.config);
    const previous = current;
    current = next;
    deps.swapped(next);
    previous.retire().catch((err: unknown) => {
      deps.logger.warn(
        { err: (err as Error).message },
        'retiring the previous configuration failed',
      );
    });
    const warnings = deps.warningsOf?.(next.compiled) ?? [];
    return finish({ ...base, ok: true, restartNeeded, ...(warnings.length > 0 && { warnings }) });
  }

  function finish(outcome: Omit<ReloadOutcome, 'at'>): ReloadOutcome {
    last = { ...outcome, at: new Date().toISOString() };
    // The warnings go to the log too, not only to `hookgate reload` (a SIGHUP has no one to tell).
    const fields = {
      trigger: last.trigger,
      file: last.file,
      ...(last.warnings !== undefined && { warnings: last.warnings }),
    };
    if (!last.ok)
      deps.logger.error({ ...fields, error: last.error }, 'reload failed; configuration unchanged');
    else if (last.restartNeeded.length > 0)
      deps.logger.warn(
        { ...fields, restartNeeded: last.restartNeeded },
        'reloaded; some changes wait for a restart',
      );
    else if (last.warnings !== undefined) deps.logger.warn(fields, 'reloaded');
    else deps.logger.info(fields, 'reloaded');
    return last;
  }

  return {
    current: () => current,
    reload(trigger) {
      // A reload waiting for the one in progress already reads the file as it will be:
      // a burst of signals or saves joins it instead of starting processes once each.
      if (waiting) return waiting;
      const run = queue.then(() => {
        waiting = undefined;
        return reloadNow(trigger);
      });
      waiting = run;
      queue = run.catch(() => undefined);
      return run;
    },
    lastReload: () => last,
    async close() {
      closed = true;
      await queue;
      await current.retire();
    },
  };
}
