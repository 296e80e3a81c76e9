/**
 * A diagnostic probe for the benchmark's server process: counts and times
 * every `COMMIT` run through node:sqlite's DatabaseSync.exec, which is how
 * the store ends a group-commit batch. The COMMIT is where the WAL fsync
 * happens, synchronously on the event loop. Engine code is not touched.
 */
import { DatabaseSync } from 'node:sqlite';

/** Running totals since the probe was installed. */
export type CommitStats = { commits: number; micros: number };

/** Wrap DatabaseSync.prototype.exec in this process; call before the store is opened. */
export function installCommitProbe(): CommitStats {
  const stats: CommitStats = { commits: 0, micros: 0 };
  const exec = DatabaseSync.prototype.exec;
  DatabaseSync.prototype.exec = function probedExec(this: DatabaseSync, sql: string): void {
    if (sql !== 'COMMIT') {
      exec.call(this, sql);
      return;
    }
    const started = performance.now();
    try {
      exec.call(this, sql);
    } finally {
      stats.commits++;
      stats.micros += (performance.now() - started) * 1000;
    }
  };
  return stats;
}
