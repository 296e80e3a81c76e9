/**
 * Whether a command runner's file can be started, looked up as execvp (and
 * so `sh`'s `exec`) looks it up. The runner is exec'd by a shell under its
 * watchdog, which cannot report a failed exec apart from the runner's own
 * exit 127; a missing or non-executable file must still be a start failure
 * (retried: the work did not happen), so it is found out before the spawn.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';

// Node's own lookup when the child's environment has no PATH.
const DEFAULT_SEARCH_PATH = '/usr/bin:/bin';

type Found = 'executable' | 'not executable' | 'missing';

async function probe(file: string): Promise<Found> {
  try {
    if (!(await stat(file)).isFile()) return 'not executable';
    await access(file, constants.X_OK);
    return 'executable';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'not executable';
  }
}

/**
 * Why `file` cannot be executed from `cwd` with the child's PATH, or null
 * when it can. A name without a slash is searched in PATH (an empty entry is
 * the working directory).
 */
export async function cannotExecute(
  file: string,
  cwd: string,
  searchPath: string | undefined,
): Promise<string | null> {
  const candidates = file.includes('/')
    ? [path.resolve(cwd, file)]
    : (searchPath ?? DEFAULT_SEARCH_PATH).split(':').map((dir) => path.resolve(cwd, dir, file));
  let seen = false;
  for (const candidate of candidates) {
    const found = await probe(candidate);
    if (found === 'executable') return null;
    if (found === 'not executable') seen = true;
  }
  if (seen) return 'not executable';
  return file.includes('/') ? 'no such file' : 'not found in PATH';
}
