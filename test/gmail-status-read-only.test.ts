/**
 * `hookgate gmail status` only reads: run against a store that has no record of the mailbox
 * yet (the service has not watched it), it shows the mailbox as unrecorded and leaves no row
 * behind (it used to insert the mailbox's row, so a look changed the store it described).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, STORE_FILE } from '../engine/store/sqlite/schema.ts';
import { setupArgs } from './helpers/gmail-binary.ts';
import { runHookgate, tempDir } from './helpers/process.ts';

const temp = tempDir();
afterAll(() => temp.cleanup());

function mailboxRows(dataDir: string): number {
  const db = new DatabaseSync(path.join(dataDir, STORE_FILE), { readOnly: true });
  try {
    return Number(
      (db.prepare('SELECT count(*) AS n FROM gmail_mailboxes').get() as { n: number }).n,
    );
  } finally {
    db.close();
  }
}

describe('hookgate gmail status', () => {
  it('changes nothing in the store: no mailbox row is made by looking', async () => {
    const config = path.join(temp.dir, 'hookgate.yaml');
    writeFileSync(config, 'hooks:\n  enabled: true\nruntime: { dataDir: ./data }\n');
    const setup = await runHookgate(setupArgs(config));
    expect(setup.code).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain('me@example.com');
    // A store as the service leaves it before the mail flow recorded anything.
    const dataDir = path.join(temp.dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    openDatabase(dataDir, { create: true }).close();
    expect(mailboxRows(dataDir)).toBe(0);

    const status = await runHookgate(['gmail', 'status', '--json', '--config', config]);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(1);
    expect(JSON.parse(status.stdout)).toMatchObject({
      account: 'me@example.com',
      unwatched: true,
      pendingPushes: 0,
      needsConsent: false,
    });
    expect(mailboxRows(dataDir)).toBe(0);
  });

  // A store left by an older hookgate may lack the mail tables: the look says to migrate it
  // (as the other views do), never a SQLite error, and leaves the file as it was.
  it('refuses a store at another schema version by name, leaving it unmigrated', async () => {
    const dir = path.join(temp.dir, 'old');
    mkdirSync(dir, { recursive: true });
    const config = path.join(dir, 'hookgate.yaml');
    writeFileSync(
      config,
      'hooks:\n  enabled: true\n  token: a-long-enough-hook-token-for-tests\n  gmail: { account: me@example.com }\nruntime: { dataDir: ./data }\n',
    );
    const dataDir = path.join(dir, 'data');
    mkdirSync(dataDir, { recursive: true });
    openDatabase(dataDir, { create: true }).close();
    const file = path.join(dataDir, STORE_FILE);
    const db = new DatabaseSync(file);
    db.exec('DROP TABLE gmail_pushes; DROP TABLE gmail_mailboxes; PRAGMA user_version = 3');
    db.close();

    const status = await runHookgate(['gmail', 'status', '--config', config]);
    expect(status.code).not.toBe(0);
    expect(status.stderr).toContain('schema version 3');
    expect(status.stderr).toContain('start this hookgate once to migrate it');
    expect(status.stderr).not.toContain('no such table');
    const check = new DatabaseSync(file, { readOnly: true });
    expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: 3 });
    check.close();
  });
});
