/**
 * `hookgate gmail status --json` before the service ever ran (README, Command line: `gmail status
 * [--json]`): the data directory has no store yet. The text view says nothing is recorded; the
 * JSON view printed that same sentence, which no script reading `--json` can parse. It prints
 * the mailbox as a store without a record of it shows one: no watch (`unwatched`), nothing
 * waiting; exit 1 as before (no push arrives).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHookgate, useProcessFixtures } from './helpers/process.ts';

const temp = useProcessFixtures();

describe('gmail status before the service ran', () => {
  it('--json prints one JSON line for the mailbox, exit 1', async () => {
    const config = path.join(temp(), 'hookgate.yaml');
    writeFileSync(
      config,
      [
        'hooks:',
        '  enabled: true',
        '  token: 0123456789abcdef0123456789abcdef',
        '  presets: [gmail]',
        '  gmail: { account: me@example.com }',
        'runtime: { dataDir: ./data }',
        '',
      ].join('\n'),
    );
    const result = await runHookgate(['gmail', 'status', '--json', '--config', config]);
    expect(result.code).toBe(1);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toEqual({
      account: 'me@example.com',
      needsConsent: false,
      pendingPushes: 0,
      watchExpired: false,
      unwatched: true,
    });
  });

  it('the text view still says nothing is recorded yet', async () => {
    const config = path.join(temp(), 'hookgate.yaml');
    writeFileSync(
      config,
      'hooks:\n  enabled: true\n  token: 0123456789abcdef0123456789abcdef\n  gmail: { account: me@example.com }\nruntime: { dataDir: ./data }\n',
    );
    const result = await runHookgate(['gmail', 'status', '--config', config]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('nothing recorded yet');
  });
});
