/**
 * Attacks by a transform process (one a transform escaped into) on what it says of its loads.
 * It names another mapping's module as
 * the one it is loading, then dies, to get that module set aside for the life of the
 * configuration. A 'loading' is taken only in the order the server sent the modules, while the
 * process starts or rebuilds: out of turn it is a lie, the process is replaced, and nothing is
 * set aside. It says it is rebuilding and then nothing: the calls waiting in it have no deadline
 * running meanwhile, so each step of a rebuild is timed, and the process is replaced.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/loading-liar.mjs', import.meta.url));
const STALLED = fileURLToPath(new URL('./fixtures/sandbox/stalled-rebuild.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

it('a process naming another module out of turn, then dying, never gets it set aside', async () => {
  const supervisor = createSupervisor(
    [
      { key: 'm', mappingId: 'liar', root: temp.dir, file: path.join(temp.dir, 'm.js') },
      { key: 'victim', mappingId: 'victim', root: temp.dir, file: path.join(temp.dir, 'v.js') },
    ],
    SANDBOX_SETTINGS,
    createLogger('silent'),
    { entry: CHILD },
  );
  try {
    await supervisor.start();
    for (let i = 0; i < 3; i++) {
      const failure = (await supervisor.call('m', {}).catch((err: Error) => err)) as Error;
      expect(failure.message).not.toContain('set aside');
    }
    const victim = (await supervisor.call('victim', {}).catch((err: Error) => err)) as Error;
    // The liar fails the victim's call too (it dies on every call), but only as a crash.
    expect(victim.message).not.toContain('set aside');
  } finally {
    await supervisor.close();
  }
}, 60_000);

it('a process that says it is rebuilding and then nothing is replaced; the call waiting in it is sent again and answered', async () => {
  const supervisor = createSupervisor(
    [{ key: 'm', mappingId: 'm', root: temp.dir, file: path.join(temp.dir, 'm.js') }],
    SANDBOX_SETTINGS,
    createLogger('silent'),
    { entry: STALLED },
  );
  try {
    await supervisor.start();
    expect(await supervisor.call('m', {})).toEqual({ value: { message: 'ok' } });
    // Sent to the process while it "rebuilds": no deadline runs, but the rebuild is bounded.
    expect(await supervisor.call('m', {})).toEqual({ value: { message: 'ok' } });
  } finally {
    await supervisor.close();
  }
}, 60_000);
