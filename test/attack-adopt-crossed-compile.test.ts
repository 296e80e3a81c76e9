/**
 * Attack: a process compiles an edit slowly (a module whose top level runs half a second) while
 * the file is edited again and the other process compiles and reports that newer edit. The
 * newer version is handed to the slow process mid-compile, and the slow process's own compile
 * then overwrites it as its fallback; the server cannot read the slow process's (stale)
 * version, so never hands the newer one on again. After a broken edit the two processes
 * answered two different versions (and a restart of the slow one a third answer: the server's).
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const SETTINGS = {
  ...SANDBOX_SETTINGS,
  cpuTimeoutMs: 400,
  deadlineMs: 10_000,
  memoryLimitMb: 64,
};
/** Resolves once `file` was read after its last write (relatime: the first read sets atime). */
async function readSinceWritten(file: string): Promise<void> {
  await waitFor(`${file} to be read`, () => {
    const { atimeMs, mtimeMs } = statSync(file);
    return atimeMs >= mtimeMs;
  });
}

/** Whether this file system records a read after a write (not mounted noatime). */
function atimeAfterWrite(): boolean {
  const probe = tempDir();
  try {
    const file = path.join(probe.dir, 'probe');
    writeFileSync(file, 'a');
    const written = statSync(file).mtimeMs;
    readFileSync(file);
    return statSync(file).atimeMs >= written;
  } finally {
    probe.cleanup();
  }
}

const ATIME = atimeAfterWrite();
if (!ATIME)
  console.log('attack-adopt-crossed-compile: skipped, the file system does not record reads');

describe.skipIf(!ATIME)('two processes compiling two edits at once', () => {
  const temp = tempDir();
  const file = path.join(temp.dir, 'm.js');
  let supervisor: TransformSupervisor;
  const version = async (): Promise<string> =>
    ((await supervisor.call('m', {})).value as { message: string }).message;

  beforeAll(async () => {
    writeFileSync(file, 'export default () => ({ message: "v0" });\n');
    supervisor = createSupervisor(
      [{ key: 'm', mappingId: 'm', root: temp.dir, file }],
      SETTINGS,
      createLogger('silent'),
      { size: 2 },
    );
    await supervisor.start();
  });
  afterAll(async () => {
    await supervisor.close();
    temp.cleanup();
  });

  /**
   * One process compiles a slow edit (its top level runs 1.2 s) while the next edit is saved
   * and the other process compiles and reports it. True when the race came out that way: the
   * fast edit answered while the slow one was still compiling.
   */
  async function crossedEdits(slow: string, fast: string): Promise<boolean> {
    writeFileSync(
      file,
      `const end = Date.now() + 1200; while (Date.now() < end);\nexport default () => ({ message: "${slow}" });\n`,
    );
    let slowDone = false;
    const slowAnswer = version().finally(() => {
      slowDone = true;
    });
    // The first process has read the slow edit (nothing but a compiling process reads the file).
    await readSinceWritten(file);
    writeFileSync(file, `export default () => ({ message: "${fast}" });\n`);
    const fastAnswer = await version();
    const crossed = !slowDone;
    expect(await slowAnswer).toBe(slow);
    expect(fastAnswer).toBe(fast);
    return crossed;
  }

  it('after a broken edit every process answers the same version', async (ctx) => {
    // Both processes have answered (calls go round them).
    expect([await version(), await version()]).toEqual(['v0', 'v0']);
    let last: string | undefined;
    // A loaded machine may compile the fast edit only after the slow one: then try again.
    for (let attempt = 1; attempt <= 3 && !last; attempt++) {
      if (await crossedEdits(`slow ${attempt}`, `fast ${attempt}`)) last = `fast ${attempt}`;
    }
    if (!last) {
      console.log('attack-adopt-crossed-compile: the edits never crossed on this machine; skipped');
      ctx.skip();
      return;
    }
    writeFileSync(file, 'export default () => ({ message: "broken" }); broken(\n');
    const after: string[] = [];
    for (let i = 0; i < 6; i++) after.push(await version());
    expect(after).toEqual(Array(6).fill(last));
  });
});
