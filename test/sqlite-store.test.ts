/**
 * The SQLite action store against the shared store contract, plus its
 * on-disk settings.
 */
import { chmodSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
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
      await store.appendOrGet({ actions: [action] });
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

describe('data directory permissions', () => {
  const modeOf = (file: string) => statSync(file).mode & 0o777;

  /** Run with a umask that lets everyone read new files: the modes must come from hookgate. */
  async function withOpenUmask<T>(run: () => Promise<T>): Promise<T> {
    const previous = process.umask(0);
    try {
      return await run();
    } finally {
      process.umask(previous);
    }
  }

  it('the data directory is created 0700 and the database, WAL and SHM files 0600', async () => {
    const temp = tempDir();
    try {
      const dataDir = path.join(temp.dir, 'nested', 'data');
      await withOpenUmask(async () => {
        const store = await openSqliteStore(dataDir);
        await store.appendOrGet({ actions: [sampleAction()] });
        const files = readdirSync(dataDir);
        expect(files).toEqual(
          expect.arrayContaining([STORE_FILE, `${STORE_FILE}-wal`, `${STORE_FILE}-shm`]),
        );
        expect(modeOf(dataDir)).toBe(0o700);
        for (const file of files) expect(modeOf(path.join(dataDir, file)), file).toBe(0o600);
        await store.close();
      });
    } finally {
      temp.cleanup();
    }
  });

  it('store files left readable by others are tightened to 0600', async () => {
    const temp = tempDir();
    try {
      const first = await openSqliteStore(temp.dir);
      await first.appendOrGet({ actions: [sampleAction()] });
      await first.close();
      const file = path.join(temp.dir, STORE_FILE);
      chmodSync(file, 0o644);
      const store = await openSqliteStore(temp.dir);
      expect(modeOf(file)).toBe(0o600);
      await store.close();
    } finally {
      temp.cleanup();
    }
  });

  it('an existing data directory open to others is reported, not changed', async () => {
    const temp = tempDir();
    try {
      chmodSync(temp.dir, 0o755);
      const warnings: string[] = [];
      const store = await openSqliteStore(temp.dir, { onWarning: (m) => warnings.push(m) });
      expect(warnings).toEqual([expect.stringContaining('open to other users (mode 755)')]);
      expect(modeOf(temp.dir)).toBe(0o755);
      expect(modeOf(path.join(temp.dir, STORE_FILE))).toBe(0o600);
      await store.close();
    } finally {
      temp.cleanup();
    }
  });
});
