/**
 * `reload.watch`: reload when the config file or a file under the
 * transforms root changes. Editors save by replacing the file, so the
 * config's directory is watched and filtered by name; changes close
 * together are one reload.
 */
import { existsSync, type FSWatcher, realpathSync, statSync, watch } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.ts';

export type WatchSettings = {
  file: string;
  transformsRoot: string;
  debounceMs: number;
  logger: Logger;
  changed: (what: string) => void;
};

/**
 * What the config path opens now: the file a chain of symlinks ends at, and its inode, size
 * and times. A deployment that swaps a link beside the config (a Kubernetes ConfigMap's
 * `..data`, `ln -sfn`) changes what the config's own name opens without an event for that name.
 */
function identity(file: string): string {
  try {
    const real = realpathSync(file);
    const stat = statSync(real);
    return `${real}\0${stat.ino}\0${stat.size}\0${stat.mtimeMs}\0${stat.ctimeMs}`;
  } catch {
    return '';
  }
}

/** Start watching; returns the function that stops it. */
export function watchForReload(settings: WatchSettings): () => void {
  const watchers: FSWatcher[] = [];
  let timer: NodeJS.Timeout | undefined;
  let what = '';
  const schedule = (name: string) => {
    what = name;
    clearTimeout(timer);
    timer = setTimeout(() => settings.changed(what), settings.debounceMs);
    timer.unref();
  };
  const add = (target: string, recursive: boolean, accept: (name: string | null) => boolean) => {
    try {
      const watcher = watch(target, { recursive, persistent: false }, (_event, name) => {
        if (accept(name)) schedule(name ? path.join(target, name) : target);
      });
      // A watched directory that disappears ends its watch; the next start watches again.
      watcher.on('error', (err) =>
        settings.logger.warn({ target, err: err.message }, 'watch ended'),
      );
      watchers.push(watcher);
    } catch (err) {
      settings.logger.warn({ target, err: (err as Error).message }, 'cannot watch for reload');
    }
  };
  const base = path.basename(settings.file);
  let seen = identity(settings.file);
  // Any other entry of the directory counts only when it changed what the config path opens.
  const configChanged = (name: string | null) => {
    const now = identity(settings.file);
    const moved = now !== seen;
    seen = now;
    return name === base || moved;
  };
  add(path.dirname(settings.file), false, configChanged);
  if (existsSync(settings.transformsRoot)) add(settings.transformsRoot, true, () => true);
  return () => {
    clearTimeout(timer);
    for (const watcher of watchers) watcher.close();
  };
}
