/**
 * Attack: a process compiles an edit slowly (a module whose top level runs half a second) while
 * the file is edited again and the other process compiles and reports that newer edit. The
 * newer version is handed to the slow process mid-compile, and the slow process's own compile
 * then overwrites it as its fallback; the server cannot read the slow process's (stale)
 * version, so never hands the newer one on again. After a broken edit the two processes
 * answered two different versions (and a restart of the slow one a third answer: the server's).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../engine/log.ts';
import { createSupervisor, type TransformSupervisor } from '../engine/sandbox/supervisor.ts';
import { tempDir } from './helpers/hookgate.ts';

const SETTINGS = {
  cpuTimeoutMs: 400,
  deadlineMs: 10_000,
  memoryLimitMb: 64,
  maxOutputBytes: 262_144,
  recycleAfterCalls: 10_000,
  recycleAboveHeapMb: 48,
  consoleLinesPerMinute: 5,
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
    await sleep(150);
    // ...when v3 is saved and the other process (the least busy) compiles and reports it.
    writeFileSync(file, 'export default () => ({ message: "v3" });\n');
    expect(await version()).toBe('v3');
    expect(await slow).toBe('v2');
    await sleep(200);

    writeFileSync(file, 'export default () => ({ message: "v4" }); broken(\n');
    const after: string[] = [];
    for (let i = 0; i < 6; i++) after.push(await version());
    expect(new Set(after).size).toBe(1);
    expect(after[0]).toBe('v3');
  });
});
