/**
 * The last good version of each transform module, kept across restarts and
 * recycles: the text of the files a process reported it compiled, read by
 * the server. A new process compiles these, not a broken edit on disk, and a
 * newer version one process compiled is handed to the others, so a broken
 * edit seen by a process that missed the good one keeps that one too.
 */
import { MAX_MODULE_BYTES, readUnchanged } from './module-files.ts';
import type { CompiledFiles, SourceFile } from './protocol.ts';

export type LastGoodSources = {
  /**
   * A process compiled a module from disk: keep the text of those files (or drop a refused
   * module's). Returns the files when they are a version not kept before (for the other
   * processes), else undefined.
   */
  record(compiled: CompiledFiles): SourceFile[] | undefined;
  /**
   * The version kept for `key` when a report was not kept and names another version (one
   * changed on disk since): what the reporting process should fall back to instead.
   */
  insteadOf(compiled: CompiledFiles): SourceFile[] | undefined;
  /** What a new process compiles instead of the files on disk, by module key. */
  sources(): Array<{ key: string; files: SourceFile[] }>;
};

/** The store for `modules`, each read only under its pinned real root. */
export function createLastGoodSources(
  modules: ReadonlyArray<{ key: string; realRoot: string }>,
): LastGoodSources {
  const rootOf = new Map(modules.map((m) => [m.key, m.realRoot]));
  const lastGood = new Map<string, SourceFile[]>();
  return {
    record({ key, files }) {
      const root = rootOf.get(key) as string;
      // A file listed twice is no graph a process compiled (and would be read, and handed on, twice).
      if (new Set(files.map((f) => f.file)).size !== files.length) return undefined;
      const kept = lastGood.get(key);
      // The same version again (another process caught up with it): nothing new to read or hand on.
      if (kept && sameVersion(kept, files)) return undefined;
      const read: SourceFile[] = [];
      let size = 0;
      // Read here (contained, and only if each file still has the signature reported).
      for (const { file, signature } of files) {
        const code = readUnchanged(root, file, signature);
        // Changed again since: that process will recompile and report the newer version.
        if (code === undefined) return undefined;
        // More than a module may have (a lying report): nothing kept to send to every restart.
        size += code.length;
        if (size > MAX_MODULE_BYTES) return undefined;
        read.push({ file, signature, code });
      }
      if (read.length === 0) {
        lastGood.delete(key);
        return undefined;
      }
      lastGood.set(key, read);
      return read;
    },
    insteadOf({ key, files }) {
      const kept = lastGood.get(key);
      return kept && !sameVersion(kept, files) ? kept : undefined;
    },
    sources: () => [...lastGood].map(([key, files]) => ({ key, files })),
  };
}

function sameVersion(
  kept: readonly SourceFile[],
  files: ReadonlyArray<{ file: string; signature: string }>,
): boolean {
  if (kept.length !== files.length) return false;
  const signatureOf = new Map(kept.map((f) => [f.file, f.signature]));
  return files.every(({ file, signature }) => signatureOf.get(file) === signature);
}
