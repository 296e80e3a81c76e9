/**
 * After-the-fact checks on a hookgate data directory: how many actions the
 * store holds (opened with node:sqlite once the server was SIGKILLed) and
 * how many lines the request log got.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';

/** Number of rows in the `actions` table of the store in `dataDir`. */
export function countStoredActions(dataDir: string): number {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE));
  try {
    const row = db.prepare('SELECT count(*) AS n FROM actions').get() as { n: number };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** Number of lines in a log file (0 when it does not exist). */
export function countLines(file: string): number {
  try {
    const text = readFileSync(file, 'utf8');
    let lines = 0;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
    return lines;
  } catch {
    return 0;
  }
}
