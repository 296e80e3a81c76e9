/**
 * The data directory's permissions: it holds every accepted payload, so it
 * is created 0700 and the store's files (database, WAL, shared memory) are
 * 0600. SQLite gives the WAL and SHM files the database file's mode, so
 * creating that file first with 0600 covers all three.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';
import { STORE_FILE } from './schema.ts';

const OWNER_ONLY_DIR = 0o700;
const OWNER_ONLY_FILE = 0o600;

/**
 * Create the data directory (0700) and the store file (0600); tighten store files that are
 * open to others. Returns a warning when an existing directory is open to others: it may be
 * a directory the operator shares on purpose (the config's own, say), so it is not changed.
 */
export function prepareDataDir(dataDir: string): string | null {
  mkdirSync(dataDir, { recursive: true, mode: OWNER_ONLY_DIR });
  const file = path.join(dataDir, STORE_FILE);
  closeSync(openSync(file, 'a', OWNER_ONLY_FILE));
  for (const name of [file, `${file}-wal`, `${file}-shm`]) tighten(name);
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) === 0) return null;
  return `the data directory is open to other users (mode ${mode.toString(8)}); run chmod 700 on it`;
}

function tighten(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return; // not there (yet): SQLite creates it with the database file's mode
  }
  if ((mode & 0o077) !== 0) chmodSync(file, mode & OWNER_ONLY_FILE);
}
