/**
 * Attack by a transform process (one a transform escaped into) on the deadlines of the calls it
 * holds. While it says it rebuilds its isolate, the calls waiting in it have not started and no
 * deadline runs; each step of a rebuild was timed, but the timer started again at any message
 * (a log line every few seconds kept a rebuild going for ever), and a process could say
 * 'rebuilt' and 'rebuilding' again with no call answered between, each time before the oldest
 * call's deadline. Either way the calls it held were never settled. A rebuild is now bounded as
 * a whole, and one that is not preceded by an answer since the last is a lie.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import type { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { createSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/endless-rebuild.mjs', import.meta.url));
const temp = tempDir();
afterAll(() => temp.cleanup());

// A rebuild step may take 4 x cpuTimeoutMs + 5 s (process-loading.ts); well past one module's.
const SETTLED_WITHIN_MS = 20_000;

it.each([
  // Not a lie in itself: the whole rebuild runs out, the call is sent again to the replacement.
  ['a log line every 300 ms while it rebuilds', 'chatter', { value: { message: 'ok' } }],
  // A second rebuild with no answer since the first is a lie: the process's calls fail.
  [
    "'rebuilt' and 'rebuilding' again every 300 ms with no answer between",
    'cycle',
    'transform_failed',
  ],
])(
  'a process that rebuilds for ever (%s) is replaced; the call waiting in it is settled',
  async (_name, key, expected) => {
    const supervisor = createSupervisor(
      [{ key, mappingId: key, root: temp.dir, file: path.join(temp.dir, `${key}.js`) }],
      SANDBOX_SETTINGS,
      createLogger('silent'),
      { entry: CHILD },
    );
    try {
      await supervisor.start();
      expect(await supervisor.call(key, {})).toEqual({ value: { message: 'ok' } });
      let timer: NodeJS.Timeout | undefined;
      const held = new Promise((resolve) => {
        timer = setTimeout(() => resolve('never settled'), SETTLED_WITHIN_MS);
      });
      const second = supervisor.call(key, {}).catch((err: HookError) => err.code);
      const outcome = await Promise.race([second, held]);
      clearTimeout(timer);
      expect(outcome).toEqual(expected);
    } finally {
      await supervisor.close();
    }
  },
  60_000,
);
