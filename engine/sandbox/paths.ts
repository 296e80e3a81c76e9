/**
 * Path containment for transform modules (spec 2.3, 2.4 rule 1, 7.2): a
 * requested path must resolve inside a root, both lexically and after
 * following symlinks (real path of the file, or of its nearest existing
 * ancestor). `..` in configured paths, absolute paths, `~`, URLs, drive
 * letters and backslashes are refused outright.
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

/** Why a path was refused. */
export class ContainmentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ContainmentError';
  }
}

/** Extensions a transform module may have. */
export const MODULE_EXTENSIONS: ReadonlySet<string> = new Set(['.js', '.mjs', '.ts', '.mts']);

/** The transforms root: `hooks/transforms` under the config directory (quickstart: the data dir). */
export function transformsRoot(baseDir: string): string {
  return path.join(baseDir, 'hooks', 'transforms');
}

/**
 * Resolve `requested` against `base` and check it stays inside `root`.
 * `allowParent`: relative imports may use `..` as long as the result stays inside.
 */
export function resolveContained(
  root: string,
  base: string,
  requested: string,
  options: { allowParent?: boolean } = {},
): string {
  refuseForms(requested, options.allowParent ?? false);
  const absoluteRoot = path.resolve(root);
  const resolved = path.resolve(base, requested);
  if (!isInside(absoluteRoot, resolved))
    throw new ContainmentError(`"${requested}" leaves the transforms root`);
  const realRoot = existsSync(absoluteRoot) ? realpathSync(absoluteRoot) : absoluteRoot;
  if (!isInside(realRoot, realOf(resolved))) {
    throw new ContainmentError(
      `"${requested}" leads outside the transforms root through a symlink`,
    );
  }
  return resolved;
}

function refuseForms(requested: string, allowParent: boolean): void {
  if (requested.length === 0) throw new ContainmentError('the path is empty');
  if (requested.includes('\0')) throw new ContainmentError('the path contains a NUL character');
  if (requested.includes('\\'))
    throw new ContainmentError(`"${requested}" uses backslashes; use "/"`);
  if (requested.startsWith('~')) throw new ContainmentError(`"${requested}" starts with "~"`);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(requested)) {
    throw new ContainmentError(`"${requested}" is a URL or drive path, not a relative path`);
  }
  if (path.isAbsolute(requested))
    throw new ContainmentError(
      `"${requested}" is absolute; give a path relative to the transforms root`,
    );
  if (!allowParent && requested.split('/').includes('..'))
    throw new ContainmentError(`"${requested}" contains ".."`);
}

/** True when `candidate` is `root` or below it. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Real path of a file, or of its nearest existing ancestor joined with the rest. */
function realOf(file: string): string {
  let existing = file;
  const rest: string[] = [];
  while (!existsSync(existing)) {
    const parent = path.dirname(existing);
    if (parent === existing) return file;
    rest.unshift(path.basename(existing));
    existing = parent;
  }
  return path.join(realpathSync(existing), ...rest);
}
