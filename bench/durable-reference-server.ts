/**
 * The benchmark's durable reference: the least a durable ingress on Node
 * does. A raw node:http server that reads the body, JSON.parses it, appends
 * it as one row (an integer key and the body text) to node:sqlite in WAL
 * mode with synchronous=FULL, and answers 200 only after the COMMIT. The
 * appends of one event-loop turn share one transaction, committed in the
 * check phase, as hookgate's group writer does with commitDelayMs 0; the
 * WAL is checkpointed as hookgate's store does. It imports nothing from
 * hookgate, so its ratio to the raw baseline is what durability alone costs
 * here: the ceiling the aims are read against. Its answers are the baseline's.
 */
import { mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { answer, BAD_BODY, OK_BODY } from './baseline-server.ts';

/** The file the reference writes in its data directory (read back by the durability check). */
export const REFERENCE_FILE = 'reference.db';
/** Its one table. */
export const REFERENCE_TABLE = 'wakes';

const FAILED_BODY = JSON.stringify({ ok: false, error: 'store' });

type Pending = { text: string; res: ServerResponse };

function openStore(dataDir: string): (texts: readonly string[]) => void {
  mkdirSync(dataDir, { recursive: true });
  const db = new DatabaseSync(path.join(dataDir, REFERENCE_FILE));
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = FULL');
  // As hookgate's store: a checkpoint every 10,000 pages rather than every 1,000.
  db.exec('PRAGMA wal_autocheckpoint = 10000');
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${REFERENCE_TABLE} (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)`,
  );
  const insert = db.prepare(`INSERT INTO ${REFERENCE_TABLE} (body) VALUES (?)`);
  return (texts) => {
    db.exec('BEGIN IMMEDIATE');
    try {
      for (const text of texts) insert.run(text);
      db.exec('COMMIT');
    } catch (err) {
      if (db.isTransaction) db.exec('ROLLBACK');
      throw err;
    }
  };
}

/** Start the reference on 127.0.0.1 (free port) over a store in `dataDir`; resolves with its URL. */
export async function startDurableReference(dataDir: string): Promise<string> {
  const append = openStore(dataDir);
  let group: Pending[] = [];
  const flush = () => {
    const items = group;
    group = [];
    let status = 200;
    try {
      append(items.map((item) => item.text));
    } catch {
      status = 500;
    }
    for (const { res } of items) answer(res, status, status === 200 ? OK_BODY : FAILED_BODY);
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        JSON.parse(text);
      } catch {
        answer(res, 400, BAD_BODY);
        return;
      }
      // The first append of a turn schedules the group's commit for the check phase.
      if (group.length === 0) setImmediate(flush);
      group.push({ text, res });
    });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
