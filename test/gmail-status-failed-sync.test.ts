/**
 * `gmail status` tells a sync that did not finish from one that did: the text view printed
 * the last attempt as `last sync: <time>`, the same line a good sync gives, so a mailbox whose
 * every sync failed (the token endpoint out of reach) read as synced a moment ago. Now a failed
 * attempt says so, with when the last sync that finished was (or never).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openMailboxStore } from '../engine/gmail/mailbox-store.ts';
import { runHookgate, tempDir, writeConfig } from './helpers/process.ts';

const temp = tempDir();
afterAll(() => temp.cleanup());

const account = 'me@example.com';

function configFor(name: string): { file: string; dataDir: string } {
  const dataDir = path.join(temp.dir, name);
  const config = {
    hooks: {
      enabled: true,
      token: 'a-hook-token-of-some-length-1234',
      gmail: {
        account,
        topic: 'projects/my-project/topics/gmail-watch',
        oauth: { clientId: 'client.apps.example', refreshToken: '1//refresh' },
      },
    },
    runtime: { dataDir },
  };
  return { file: writeConfig(temp.dir, JSON.stringify(config), `${name}.yaml`), dataDir };
}

function record(dataDir: string, syncs: Array<[number, string | undefined]>): void {
  mkdirSync(dataDir, { recursive: true });
  const store = openMailboxStore(dataDir);
  try {
    for (const [at, error] of syncs) store.recordSync(account, at, error);
  } finally {
    store.close();
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

describe('gmail status after a sync that did not finish', () => {
  it('says the attempt failed and that no sync ever finished', async () => {
    const { file, dataDir } = configFor('never');
    const at = Date.UTC(2026, 0, 2, 3, 4, 5);
    record(dataDir, [[at, 'sync failed: token endpoint failed: ENOTFOUND']]);
    const result = await runHookgate(['gmail', 'status', '--config', file]);
    expect(result.stdout).toContain(
      `last sync: ${iso(at)} (did not finish; last finished sync: never)`,
    );
  });

  it('names the last sync that finished before the failed one', async () => {
    const { file, dataDir } = configFor('earlier');
    const good = Date.UTC(2026, 0, 2, 3, 0, 0);
    const failed = Date.UTC(2026, 0, 2, 3, 4, 5);
    record(dataDir, [
      [good, undefined],
      [failed, 'sync failed: Gmail HTTP 500 (backendError)'],
    ]);
    const result = await runHookgate(['gmail', 'status', '--config', file]);
    expect(result.stdout).toContain(
      `last sync: ${iso(failed)} (did not finish; last finished sync: ${iso(good)})`,
    );
  });

  it('shows a sync that finished as before', async () => {
    const { file, dataDir } = configFor('good');
    const good = Date.UTC(2026, 0, 2, 3, 0, 0);
    record(dataDir, [[good, undefined]]);
    const result = await runHookgate(['gmail', 'status', '--config', file]);
    expect(result.stdout).toMatch(new RegExp(`^last sync: ${iso(good)}$`, 'm'));
  });
});
