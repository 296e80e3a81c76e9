/**
 * Attack on the report budget: a module refused (its file leads outside the transforms root)
 * has no last good sources, so every rebuild of the isolate loads it from disk again, refuses
 * it again and reports it again. Rebuilds follow calls (recycleAfterCalls, a heap above
 * recycleAboveHeapMb that any transform can cause, a memory kill): past 100 + 20 per module
 * reports a minute the honest process was killed as a "report flood", failing every call it
 * held, whichever mapping's.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const SETTINGS = {
  ...SANDBOX_SETTINGS,
  cpuTimeoutMs: 500,
  deadlineMs: 5000,
  // Every call rebuilds the isolate, as a transform that leaves a large heap makes it.
  recycleAfterCalls: 1,
};

describe('a refused module and frequent rebuilds', () => {
  const temp = tempDir();
  const root = path.join(temp.dir, 'transforms');
  let supervisor: TransformSupervisor;

  beforeAll(async () => {
    mkdirSync(root);
    writeFileSync(path.join(temp.dir, 'outside.js'), 'export default () => ({});\n');
    symlinkSync(path.join(temp.dir, 'outside.js'), path.join(root, 'refused.js'));
    writeFileSync(path.join(root, 'ok.js'), 'export default () => ({ message: "ok" });\n');
    supervisor = createSupervisor(
      [
        { key: 'ok', mappingId: 'ok', root, file: path.join(root, 'ok.js') },
        { key: 'refused', mappingId: 'refused', root, file: path.join(root, 'refused.js') },
      ],
      SETTINGS,
      createLogger('silent'),
    );
    const errors = await supervisor.start();
    expect([...errors.keys()]).toEqual(['refused']);
  });
  afterAll(async () => {
    await supervisor.close();
    temp.cleanup();
  });

  it('every honest call is answered', async () => {
    const failed: string[] = [];
    // Budget: 100 + 20 x 2 reports a minute.
    for (let i = 0; i < 160; i++) {
      try {
        await supervisor.call('ok', {});
      } catch (err) {
        failed.push(err instanceof HookError ? `${i}: ${err.message}` : String(err));
      }
    }
    expect(failed).toEqual([]);
  });
});
