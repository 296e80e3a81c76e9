/**
 * A diagnostic probe for the benchmark's server process: counts and times
 * every `COMMIT` run through node:sqlite's DatabaseSync.exec, which is how
 * the store ends a transaction, synchronously on the event loop. Commits of
 * a connection with synchronous=FULL (acceptance: a group commit, an fsync
 * each) are counted apart from the others (the runtime's lifecycle writes,
 * no fsync). Engine code is not touched.
 */
import { DatabaseSync } from 'node:sqlite';

/** Running totals since the probe was installed. */
export type CommitStats = {
  /** COMMITs of durable connections (synchronous=FULL): acceptance groups. */
  commits: number;
  micros: number;
  /** COMMITs of the other connections (the runtime's, synchronous=NORMAL). */
  lifecycleCommits: number;
  lifecycleMicros: number;
};

const FULL = 2;

/** Wrap DatabaseSync.prototype.exec in this process; call before the store is opened. */
export function installCommitProbe(): CommitStats {
  const stats: CommitStats = { commits: 0, micros: 0, lifecycleCommits: 0, lifecycleMicros: 0 };
  const durable = new WeakMap<DatabaseSync, boolean>();
  const isDurable = (db: DatabaseSync): boolean => {
    let known = durable.get(db);
    if (known === undefined) {
      const row = db.prepare('PRAGMA synchronous').get() as { synchronous: number };
      known = row.synchronous >= FULL;
      durable.set(db, known);
    }
    return known;
  };
  const exec = DatabaseSync.prototype.exec;
  DatabaseSync.prototype.exec = function probedExec(this: DatabaseSync, sql: string): void {
    if (sql !== 'COMMIT') {
      exec.call(this, sql);
      return;
    }
    const full = isDurable(this);
    const started = performance.now();
    try {
      exec.call(this, sql);
    } finally {
      const micros = (performance.now() - started) * 1000;
      if (full) {
        stats.commits++;
        stats.micros += micros;
      } else {
        stats.lifecycleCommits++;
        stats.lifecycleMicros += micros;
      }
    }
  };
  return stats;
}
