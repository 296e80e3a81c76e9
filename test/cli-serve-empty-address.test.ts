/**
 * `hookgate serve --host H --port P` (README, Command line): an empty `--host` reached
 * Node's listen as "no host" and the hooks listened on every interface (`http://[::]:...`),
 * where the config's `server.host` must be non-empty and the contract keeps the endpoints
 * behind loopback; an empty `--port` read as 0 (a random port). Both are usage errors now:
 * exit 2 naming the flag, and nothing listens. Any value flag given empty is refused so
 * (`--config "$UNSET"` ran the quickstart, `--data-dir ""` read ./data).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnHookgate, useProcessFixtures } from './helpers/process.ts';

// Any address: the refused run listened on every interface, not on loopback.
const LISTENING_ANYWHERE = /hookgate listening on http/;

const temp = useProcessFixtures();

function config(dir: string): string {
  const file = path.join(dir, 'hookgate.yaml');
  writeFileSync(
    file,
    'hooks:\n  enabled: true\n  token: 0123456789abcdef0123456789abcdef\nruntime: { dataDir: ./data }\n',
  );
  return file;
}

describe('an empty value flag is refused, not read as not given', () => {
  it.each([
    [['actions', '--data-dir', ''], '--data-dir'],
    [['check', '--config', ''], '--config'],
    [['serve', '--config', '', '--port', '0'], '--config'],
    [['actions', '--limit', ' '], '--limit'],
  ])('%j', async (args, flag) => {
    const proc = spawnHookgate(args, { cwd: temp() });
    const exit = await proc.waitForExit();
    expect(exit.code).toBe(2);
    expect(proc.stderr()).toContain(`${flag} is empty`);
    expect(proc.stdout()).not.toMatch(LISTENING_ANYWHERE);
  });
});

describe('serve refuses an empty address flag', () => {
  it.each([
    ['--host', ['--host', '', '--port', '0']],
    ['--host', ['--host', '   ', '--port', '0']],
    ['--port', ['--port', '']],
    ['--port', ['--port', ' ']],
  ])('%s %j: exit 2 naming it, never listening', async (flag, args) => {
    const proc = spawnHookgate(['serve', '--config', config(temp()), ...args]);
    const outcome = await Promise.race([
      proc.exited.then((exit) => ({ listening: false, ...exit })),
      proc.waitForStdout(LISTENING_ANYWHERE).then(
        () => ({ listening: true, code: null }),
        () => proc.exited.then((exit) => ({ listening: false, ...exit })),
      ),
    ]);
    expect(outcome.listening).toBe(false);
    expect(outcome.code).toBe(2);
    // Empty: a usage error of the flag parse; blank host or port: their own checks.
    expect(proc.stderr()).toMatch(new RegExp(`^hookgate: (serve: |config error: )${flag}`));
  });
});
