/**
 * Attack: a mapping whose calls kill their transform process, with two processes. A crash
 * charges only the running call's mapping but counts a crash against every call present. An
 * honest call of another mapping sent again after a crash goes to the other process, behind
 * that mapping's fresh call (charged nothing), which crashes it in turn: the honest call is
 * present at every crash, and failed at CRASHES_PER_CALL of them (with one process it is
 * present at two at most: the poisoned calls ahead of it are all charged, and gone).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HookError } from '../engine/errors.ts';
import { createLogger } from '../engine/log.ts';
import { CRASHES_PER_CALL } from '../engine/sandbox/kill-charges.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const CHILD = fileURLToPath(new URL('./fixtures/sandbox/crashing-child.mjs', import.meta.url));
const SETTINGS = {
  ...SANDBOX_SETTINGS,
  deadlineMs: 30_000,
};

describe('a poisoned mapping crashing two processes in turn', () => {
  const temp = tempDir();
  let supervisor: TransformSupervisor;
  let triggers = 0;
  const poisoned: Array<Promise<unknown>> = [];
  /** A call of the poisoned mapping that kills its process once told to. */
  const poison = (): void => {
    const crashOn = path.join(temp.dir, `crash-${++triggers}`);
    poisoned.push(supervisor.call('p', { crashOn }).catch(() => undefined));
  };
  const running = (n: number) =>
    waitFor(`poisoned call ${n} to run`, () =>
      existsSync(path.join(temp.dir, `crash-${n}.running`)),
    );

  beforeAll(async () => {
    supervisor = createSupervisor(
      [
        { key: 'p', mappingId: 'poisoned', root: temp.dir, file: path.join(temp.dir, 'p.js') },
        { key: 'q', mappingId: 'honest', root: temp.dir, file: path.join(temp.dir, 'q.js') },
      ],
      SETTINGS,
      createLogger('silent'),
      { entry: CHILD, size: 2 },
    );
    await supervisor.start();
  });
  afterAll(async () => {
    await supervisor.close();
    await Promise.all(poisoned);
    temp.cleanup();
  });

  it('the honest call is answered, however often it is moved', async () => {
    const behind = path.join(temp.dir, 'behind');
    // One poisoned call running in each process; the honest call waits behind one of them.
    poison();
    poison();
    await Promise.all([running(1), running(2)]);
    let settled = false;
    const honest = supervisor.call('q', { behind }).then(
      () => 'answered',
      (err: unknown) => (err instanceof HookError ? `${err.code}: ${err.message}` : String(err)),
    );
    void honest.finally(() => {
      settled = true;
    });
    for (let round = 0; round < CRASHES_PER_CALL; round++) {
      await waitFor('the honest call behind a poisoned one', () => settled || existsSync(behind));
      if (settled) break;
      const crashOn = readFileSync(behind, 'utf8');
      rmSync(behind);
      // The process holding the honest call dies; the call moves to the other one.
      writeFileSync(crashOn, '');
      await waitFor('the replacement', () => supervisor.processes().ready === 2);
      // The attacker's next call goes to the replacement (the least busy process).
      poison();
    }
    // Let the honest call through: every poisoned call dies.
    for (let i = 1; i <= triggers; i++) writeFileSync(path.join(temp.dir, `crash-${i}`), '');
    expect(await honest).toBe('answered');
  });
});
