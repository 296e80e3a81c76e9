/**
 * A transform process replaced by a hostile one (a fixture under test/fixtures/sandbox/) that
 * answers each call with its pid as the message: the supervisor must replace it once it
 * misbehaves, which shows as a later call answered by another pid.
 */
import path from 'node:path';
import { expect } from 'vitest';
import type { HookError } from '../../engine/errors.ts';
import { createLogger } from '../../engine/log.ts';
import { createSupervisor } from '../../engine/sandbox/supervisor.ts';
import { SANDBOX_SETTINGS } from './sandbox-settings.ts';

/** Start a supervisor on `entry` (one mapping under `root`) and wait until it is replaced. */
export async function expectChildReplaced(entry: string, root: string): Promise<void> {
  const supervisor = createSupervisor(
    [{ key: 'm', mappingId: 'm', root, file: path.join(root, 'm.js') }],
    SANDBOX_SETTINGS,
    createLogger('silent'),
    { entry },
  );
  const pidOf = async () => {
    const answer = await supervisor.call('m', {}).catch((err: HookError) => err.code);
    return typeof answer === 'string' ? answer : (answer.value as { message: string }).message;
  };
  try {
    await supervisor.start();
    const first = await pidOf();
    // The hostile process misbehaves from its first call on: it is replaced within moments.
    let later = first;
    for (let i = 0; i < 50 && later === first; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      later = await pidOf();
    }
    expect(later).not.toBe(first);
  } finally {
    await supervisor.close();
  }
}
