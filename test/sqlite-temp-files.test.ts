/**
 * The store's temporary data (savepoint journals, sorts) stays in memory: past 64 KiB SQLite
 * would spill it to a file of its own in /var/tmp, outside the data directory, with the request
 * text the rows hold (and an open, write, unlink and close for every runtime batch that
 * undoes a write alone). Seen through the process's open files while such a savepoint is open.
 */
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../engine/store/sqlite/schema.ts';
import { tempDir } from './helpers/hookgate.ts';

const FDS = '/proc/self/fd';

/** The files this process holds open. */
function openFiles(): string[] {
  return readdirSync(FDS).flatMap((fd) => {
    try {
      return [readlinkSync(`${FDS}/${fd}`)];
    } catch {
      return [];
    }
  });
}

describe('the store keeps its temporary data in memory', () => {
  it.skipIf(!existsSync(FDS))('a large savepoint opens no file outside the data directory', () => {
    const { dir, cleanup } = tempDir('hookgate-temp-');
    const db = openDatabase(dir, { create: true });
    try {
      const before = new Set(openFiles());
      db.exec('BEGIN IMMEDIATE');
      const insert = db.prepare(
        "INSERT INTO system_events (session_key, text, source, trusted, created_at) VALUES ('main', ?, 'wake', 0, '')",
      );
      // 300 KB of request text, then changed again under a savepoint (as a batched write is).
      for (let i = 0; i < 100; i++) insert.run(`request text ${i} `.padEnd(3_000, 'x'));
      db.exec('SAVEPOINT one');
      db.exec("UPDATE system_events SET text = text || 'y'");
      const opened = openFiles().filter((file) => !before.has(file));
      db.exec('RELEASE one');
      db.exec('COMMIT');
      expect(opened.filter((file) => !file.startsWith(dir))).toEqual([]);
      expect(Number(db.prepare('SELECT count(*) AS n FROM system_events').get()?.['n'])).toBe(100);
    } finally {
      db.close();
      cleanup();
    }
  });
});
