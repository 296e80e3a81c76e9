/**
 * The store's doorbell: a command that changes what the running server acts
 * on (an operator request, a run sent back) rings it after its write, and
 * the server, which watches the bell (inotify on Linux), looks at the store
 * at once instead of reading it on a timer while idle. The bell is a file
 * beside the store holding nothing of value; a ring is a write to it. The
 * file itself is watched, not the data directory, whose store files change
 * with every commit.
 */
import {
  closeSync,
  constants,
  type FSWatcher,
  fstatSync,
  openSync,
  watch,
  writeSync,
} from 'node:fs';
import path from 'node:path';

export const DOORBELL_FILE = 'hookgate.doorbell';
// Like the store's files: only its owner rings.
const OWNER_ONLY = 0o600;

// Never through a link, and never anything but a plain file: in a data directory others can
// write to, a link planted there must not make a ring write over another file.
const OPEN_BELL = constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW;

/** Open the bell (created when missing): a plain file, not a link; throws otherwise. */
function openBell(file: string): number {
  const fd = openSync(file, OPEN_BELL, OWNER_ONLY);
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new Error(`${file} is not a plain file`);
  }
  return fd;
}

/** Tell a server watching `dataDir` to look at the store; false when the bell could not be rung. */
export function ringDoorbell(dataDir: string): boolean {
  return whyNotRung(dataDir) === undefined;
}

/** Ring; undefined when rung, else why not (for the command that must say so). */
export function whyNotRung(dataDir: string): string | undefined {
  try {
    const fd = openBell(path.join(dataDir, DOORBELL_FILE));
    try {
      // Written in place (no truncation): any write is a ring.
      writeSync(fd, `${Date.now()}\n`, 0);
    } finally {
      closeSync(fd);
    }
    return undefined;
  } catch (err) {
    return (err as Error).message;
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
    closeSync(openBell(file));
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
