/**
 * `hookgate serve --host H --port P` (README, Command line): an empty `--host` reached
 * Node's listen as "no host" and the hooks listened on every interface (`http://[::]:...`),
 * where the config's `server.host` must be non-empty and the contract keeps the endpoints
 * behind loopback; an empty `--port` read as 0 (a random port). Both are usage errors now:
 * exit 2 naming the flag, and nothing listens.
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
    expect(proc.stderr()).toContain(`hookgate: config error: ${flag}: `);
  });
});
