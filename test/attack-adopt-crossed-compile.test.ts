/**
 * Attack: a process compiles an edit slowly (a module whose top level runs half a second) while
 * the file is edited again and the other process compiles and reports that newer edit. The
 * newer version is handed to the slow process mid-compile, and the slow process's own compile
 * then overwrites it as its fallback; the server cannot read the slow process's (stale)
 * version, so never hands the newer one on again. After a broken edit the two processes
 * answered two different versions (and a restart of the slow one a third answer: the server's).
 */
import { statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';
import { SANDBOX_SETTINGS } from './helpers/sandbox-settings.ts';

const SETTINGS = {
  ...SANDBOX_SETTINGS,
  cpuTimeoutMs: 400,
  deadlineMs: 10_000,
  memoryLimitMb: 64,
};
/** Resolves once `file` was read after its last write (relatime: the first read sets atime). */
async function readSinceWritten(file: string): Promise<void> {
  const until = Date.now() + 20_000;
  for (;;) {
    const { atimeMs, mtimeMs } = statSync(file);
    if (atimeMs >= mtimeMs) return;
    if (Date.now() > until) throw new Error(`${file} was not read (is the file system noatime?)`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('two processes compiling two edits at once', () => {
  const temp = tempDir();
  const file = path.join(temp.dir, 'm.js');
  let supervisor: TransformSupervisor;
  const version = async (): Promise<string> =>
    ((await supervisor.call('m', {})).value as { message: string }).message;

  beforeAll(async () => {
    writeFileSync(file, 'export default () => ({ message: "v1" });\n');
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

  it('after a broken edit every process answers the same version', async () => {
    // Both processes have answered v1 (calls go round them).
    expect([await version(), await version()]).toEqual(['v1', 'v1']);

    // v2 takes half a second to evaluate: the first process is compiling it...
    writeFileSync(
      file,
      'const end = Date.now() + 500; while (Date.now() < end);\nexport default () => ({ message: "v2" });\n',
    );
    const slow = version();
    // The first process has read v2 (nothing else reads the file but a process compiling it).
    await readSinceWritten(file);
    // ...when v3 is saved and the other process (the least busy) compiles and reports it.
    writeFileSync(file, 'export default () => ({ message: "v3" });\n');
    expect(await version()).toBe('v3');
    // Its report came before its answer: the server's v3 was handed back to it by then.
    expect(await slow).toBe('v2');

    writeFileSync(file, 'export default () => ({ message: "v4" }); broken(\n');
    const after: string[] = [];
    for (let i = 0; i < 6; i++) after.push(await version());
    expect(new Set(after).size).toBe(1);
    expect(after[0]).toBe('v3');
  });
});
