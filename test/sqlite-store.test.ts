/**
 * The SQLite action store against the shared store contract, plus its
 * on-disk settings.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { openSqliteStore, STORE_FILE } from '../engine/queue/sqlite-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { describeActionStore, sampleAction } from './store-contract.ts';

describeActionStore('sqlite (group commit on next tick)', () => {
  const temp = tempDir();
  return { open: () => openSqliteStore(temp.dir), cleanup: temp.cleanup };
});

describeActionStore('sqlite (2 ms commit window)', () => {
  const temp = tempDir();
  return { open: () => openSqliteStore(temp.dir, { commitDelayMs: 2 }), cleanup: temp.cleanup };
});

describe('sqlite store file', () => {
  it('uses WAL journaling, and a committed action is visible to another connection', async () => {
    const temp = tempDir();
    try {
      const store = await openSqliteStore(temp.dir);
      const action = sampleAction();
      await store.append({ actions: [action] });
      const reader = new DatabaseSync(path.join(temp.dir, STORE_FILE), { readOnly: true });
      const mode = reader.prepare('PRAGMA journal_mode').get() as { journal_mode: string };
      expect(mode.journal_mode).toBe('wal');
      const row = reader.prepare('SELECT id, state FROM actions WHERE id = ?').get(action.id);
      expect(row).toEqual({ id: action.id, state: 'queued' });
      reader.close();
      await store.close();
    } finally {
      temp.cleanup();
    }
  });
});
