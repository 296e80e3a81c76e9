/**
 * Which version of each transform module every process falls back to on a
 * broken edit: the server's (last-good-sources.ts). A version new to the
 * server goes to every live process, the one that compiled it too, so the
 * last version handed on is every process's even when two processes
 * compiled two edits at once and their reports crossed; a report the
 * server could not keep gets the server's version back.
 */
import { createLastGoodSources } from './last-good-sources.ts';
import type { Slot } from './process-slot.ts';
import type { CompiledFiles, SourceFile } from './protocol.ts';

export type VersionHandoff = {
  /** A process reported the files it compiled a module from. */
  compiled(from: Slot<unknown>, report: CompiledFiles): void;
  /** What a new process compiles instead of the files on disk, by module key. */
  sources(): Array<{ key: string; files: SourceFile[] }>;
};

/** The hand-off over `slots`, for `modules` read under their pinned real roots. */
export function createVersionHandoff(
  modules: ReadonlyArray<{ key: string; realRoot: string }>,
  slots: ReadonlyArray<Slot<unknown>>,
): VersionHandoff {
  const lastGood = createLastGoodSources(modules);
  const give = (slot: Slot<unknown>, key: string, files: SourceFile[]): void => {
    if (slot.state === 'starting' || slot.state === 'ready')
      slot.link?.adopt({ type: 'adopt', key, files });
  };
  return {
    compiled(from, report) {
      const fresh = lastGood.record(report);
      if (fresh) {
        for (const slot of slots) give(slot, report.key, fresh);
        return;
      }
      // Not kept (changed on disk before the server read it, say, while a newer version was
      // handed to this process mid-compile and then overwritten by its own): the server's
      // version is its fallback again, as every other process's and every restart's.
      const kept = lastGood.insteadOf(report);
      if (kept) give(from, report.key, kept);
    },
    sources: () => lastGood.sources(),
  };
}
