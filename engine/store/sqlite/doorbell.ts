/**
 * The store's doorbell: a command that changes what the running server acts
 * on (an operator request, a run sent back) rings it after its write, and
 * the server, which watches the bell (inotify on Linux), looks at the store
 * at once instead of reading it on a timer while idle. The bell is a file
 * beside the store holding nothing of value; a ring is a write to it. The
 * file itself is watched, not the data directory, whose store files change
 * with every commit.
 */
import { closeSync, type FSWatcher, openSync, watch, writeFileSync } from 'node:fs';
import path from 'node:path';

export const DOORBELL_FILE = 'hookgate.doorbell';
// Like the store's files: only its owner rings.
const OWNER_ONLY = 0o600;

/** Tell a server watching `dataDir` to look at the store; false when the bell could not be rung. */
export function ringDoorbell(dataDir: string): boolean {
  try {
    writeFileSync(path.join(dataDir, DOORBELL_FILE), `${Date.now()}\n`, { mode: OWNER_ONLY });
    return true;
  } catch {
    return false;
  }
}

/**
 * Call `onRing` after each ring at `dataDir`'s bell (created when missing) until the returned
 * stop is called. Throws when the bell cannot be watched; `onError` hears of a watch that broke
 * later.
 */
export function watchDoorbell(
  dataDir: string,
  onRing: () => void,
  onError: (err: Error) => void,
): () => void {
  const file = path.join(dataDir, DOORBELL_FILE);
  let watcher: FSWatcher | undefined;
  let stopped = false;
  const start = (): void => {
    closeSync(openSync(file, 'a', OWNER_ONLY));
    watcher = watch(file, { persistent: false }, (event) => {
      // The file was replaced or removed: watch the one at the path now.
      if (event === 'rename') restart();
      onRing();
    });
    watcher.on('error', onError);
  };
  const restart = (): void => {
    watcher?.close();
    if (stopped) return;
    try {
      start();
    } catch (err) {
      onError(err as Error);
    }
  };
  start();
  return () => {
    stopped = true;
    watcher?.close();
  };
}
