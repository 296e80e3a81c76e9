/**
 * Reading transform module files inside the transform process, with
 * containment checked on every read (boot, restart, recycle, hot reload):
 * the file is opened first and the path of what was opened is checked
 * against the real transforms root, so a file swapped for a symlink that
 * leads outside is refused, even if it is swapped between check and read.
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { ContainmentError, isInside } from './paths.ts';

/** The real path of the root, resolved once (the server pins it at boot). */
export function realRootOf(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root;
  }
}

/**
 * Bytes of source a transform module may have, all its files together. Each restart sends every
 * module's last good text to the new process in one frame, encoded on the server's event loop
 * (a 20 MB module held it 0.6 s), and each rebuild compiles it again: bounded, both stay short.
 */
export const MAX_MODULE_BYTES = 2 * 1024 * 1024;

/** A module file or graph over MAX_MODULE_BYTES: a load error (the module does not run). */
export function tooLargeError(what: string): Error {
  return new Error(
    `${what} is larger than ${MAX_MODULE_BYTES / 1024 / 1024} MiB, the limit of a transform module`,
  );
}

/** The text of `file`, refused unless what is opened lies inside `realRoot` and is a regular file. */
export function readContained(realRoot: string, file: string): string {
  // Non-blocking: a FIFO put in a module's place must not hang the process.
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!isInside(realRoot, openedPath(fd, file))) {
      throw new ContainmentError(`"${file}" leads outside the transforms root`);
    }
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ContainmentError(`"${file}" is not a regular file`);
    if (stat.size > MAX_MODULE_BYTES) throw tooLargeError(`"${file}"`);
    // Node reads UTF-8 text straight into a string (no buffer of ours held until a GC); a file
    // that grew since its size was read is caught by its length.
    const code = readFileSync(fd, 'utf8');
    if (code.length > MAX_MODULE_BYTES) throw tooLargeError(`"${file}"`);
    return code;
  } finally {
    closeSync(fd);
  }
}

/** What a file descriptor really points at (Linux /proc), else the real path of the name. */
function openedPath(fd: number, file: string): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return realpathSync(file);
  }
}

/**
 * A signature that changes when a file is edited, replaced or swapped for a
 * symlink (the link's own inode and the target's), or removed.
 */
export function signatureOf(file: string): string {
  const link = lstatSync(file, { throwIfNoEntry: false });
  // One call per file in the common case: a regular file is its own target.
  const target = link?.isSymbolicLink() ? statSync(file, { throwIfNoEntry: false }) : link;
  if (!link || !target) return 'missing';
  return `${link.ino}:${link.mtimeMs}:${link.size}/${target.ino}:${target.mtimeMs}:${target.size}`;
}

/**
 * The text of `file` if it still has `signature` before and after the read (the version a
 * transform process reports it compiled), else undefined: what the server keeps as a module's
 * last good source.
 */
export function readUnchanged(
  realRoot: string,
  file: string,
  signature: string,
): string | undefined {
  try {
    if (signatureOf(file) !== signature) return undefined;
    const code = readContained(realRoot, file);
    return signatureOf(file) === signature ? code : undefined;
  } catch {
    return undefined;
  }
}
