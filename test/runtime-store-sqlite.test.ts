/**
 * The runtime store contract on the embedded SQLite store: actions accepted
 * through the action store's accept path (its group commit, as the ingress
 * does), the runtime's connections opened on the same file.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { ActionStore } from '../engine/queue/action-store.ts';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { describeRuntimeStore } from './runtime-store-contract.ts';

describeRuntimeStore(
  'SQLite',
  async () => {
    const { dir, cleanup } = tempDir('hookgate-runtime-store-');
    // Opened at the first accept and kept, as the ingress keeps it.
    let accepting: Promise<ActionStore> | undefined;
    return {
      open: async () => SqliteRuntimeStore.open(dir),
      async accept(actions) {
        accepting ??= openSqliteStore(dir);
        const outcome = await (await accepting).appendOrGet({ actions });
        if (!outcome.stored) throw new Error('the actions were not stored');
      },
      async deliveryStates(sourceId) {
        const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
        try {
          const rows = db
            .prepare('SELECT state FROM deliveries WHERE source_id = ? ORDER BY created_at')
            .all(sourceId);
          return rows.map((row) => String(row['state']));
        } finally {
          db.close();
        }
      },
      async cleanup() {
        await (await accepting)?.close();
        cleanup();
      },
    };
  },
  { shared: false },
);
