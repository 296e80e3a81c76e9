/**
 * Attack by a transform process (one a transform escaped into) on the server's CPU: writing to
 * its stderr as fast as the pipe takes it. The server read every chunk and logged 20 a minute;
 * reading the rest cost it most of a core for as long as the process lived (about 2 GB in 5 s,
 * 3.7 s of the server's CPU, its event loop delayed 13 ms at the 99th percentile), and the
 * process was never replaced. More stderr a minute than an honest process writes (it writes
 * there only as it dies) is now a flood: the process is killed and replaced, as for any other
 * channel it floods.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { createSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/stderr-flood.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

it('a process flooding its stderr is replaced', async () => {
  const supervisor = createSupervisor(
    [{ key: 'm', mappingId: 'm', root: temp.dir, file: path.join(temp.dir, 'm.js') }],
    SANDBOX_SETTINGS,
    createLogger('silent'),
    { entry: CHILD },
  );
  const pidOf = async () => {
    const answer = await supervisor.call('m', {}).catch((err: HookError) => err.code);
    return typeof answer === 'string' ? answer : (answer.value as { message: string }).message;
  };
  try {
    await supervisor.start();
    const first = await pidOf();
    // The first process floods from its first call on: it is replaced within moments.
    let later = first;
    for (let i = 0; i < 50 && later === first; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      later = await pidOf();
    }
    expect(later).not.toBe(first);
  } finally {
    await supervisor.close();
  }
}, 60_000);
