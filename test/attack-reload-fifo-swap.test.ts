/**
 * A reload checked that the config path was a regular file (a FIFO would block the reading
 * worker where no deadline can end it), then started a worker thread that opened the file by
 * name tens of milliseconds later. A config path swapped for a FIFO in that window (a `rename`
 * over it, as any writer of the config directory can do) was opened by the worker, whose read
 * blocked in open(2) for good: terminate() cannot end a thread in a system call, and the stuck
 * thread kept the process alive after SIGTERM. Now the file is opened once, without blocking,
 * and what was opened is checked and read: a FIFO at the path, whenever it was put there, is
 * refused as not a regular file, and the server stops when told.
 */
import { execFileSync } from 'node:child_process';
import { renameSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ciWakeConfig } from './helpers/reload-config.ts';
import { killAll, startServer, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

it('a config file swapped for a FIFO is refused by a reload, and the server stops when told', async () => {
  const { dir, cleanup } = tempDir('hookgate-fifo-swap-');
  try {
    const file = writeConfig(dir, ciWakeConfig('build {{payload.build}}'));
    const server = await startServer(['--config', file], { cwd: dir });
    const fifo = path.join(dir, 'next.yaml');
    execFileSync('mkfifo', [fifo]);
    renameSync(fifo, file);
    server.child.kill('SIGHUP');
    await server.waitForStdout(/reload failed; configuration unchanged/, 20_000);
    expect(server.stdout()).toContain('is not a regular file');
    // Still serving; now stop it as an operator or an orchestrator would.
    server.child.kill('SIGTERM');
    const exit = await Promise.race([
      server.exited,
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000)),
    ]);
    expect(exit).not.toBe('still running');
  } finally {
    await killAll();
    cleanup();
  }
}, 60_000);
