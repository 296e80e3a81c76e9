/**
 * The embedded store as a running server holds it, for tests below the
 * server: the accepting store and the runtime's store on one data directory
 * in a temporary directory, and a way to accept actions as the ingress does.
 */
import type { ActionStore } from '../../engine/queue/action-store.ts';
import { openSqliteStore } from '../../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../../engine/store/sqlite/runtime-store.ts';
import type { Action } from '../../schemas/action.ts';
import { tempDir } from './hookgate.ts';

export type SqliteStores = {
  dir: string;
  accepting: ActionStore;
  runtime: SqliteRuntimeStore;
  /** Store the actions as one accepted request (queued, in this order). */
  accept(actions: Action[]): Promise<void>;
  /** Close both stores and remove the directory. */
  close(): Promise<void>;
};

/** Open both stores on a fresh data directory. */
export async function openSqliteStores(prefix: string): Promise<SqliteStores> {
  const { dir, cleanup } = tempDir(prefix);
  const accepting = await openSqliteStore(dir);
  const runtime = SqliteRuntimeStore.open(dir);
  return {
    dir,
    accepting,
    runtime,
    async accept(actions) {
      const outcome = await accepting.appendOrGet({ actions });
      if (!outcome.stored) throw new Error('the actions were not stored');
    },
    async close() {
      await runtime.close();
      await accepting.close();
      cleanup();
    },
  };
}
