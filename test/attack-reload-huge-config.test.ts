/**
 * A reload reads the config file in a worker "under a deadline and a heap limit" (256 MB), but
 * the worker reads the whole file with readFileSync before anything is parsed: the file's
 * bytes are an external Buffer, outside the heap limit, in the process's own memory, and no
 * size is checked first. A config file replaced by a large one (a log or a dump written to the
 * wrong path, or a sparse file made in an instant with `truncate -s`) takes the server's
 * resident memory up by the file's size, up to 2 GB, on every SIGHUP or watched save: under a
 * container's memory limit the kernel kills the server for a file that was always going to
 * be refused. Now a file over 4 MiB is refused by the size of what was opened, unread.
 */
import { readFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { ciWakeConfig } from './helpers/reload-config.ts';
import { killAll, startServer, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

/** The process's peak resident memory so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const line = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1]) * 1024;
}

it('a huge config file is refused without the server taking its size in memory', async () => {
  const { dir, cleanup } = tempDir('hookgate-huge-config-');
  try {
    const file = writeConfig(dir, ciWakeConfig('build {{payload.build}}'));
    const server = await startServer(['--config', file], { cwd: dir });
    const pid = server.child.pid as number;
    const before = peakRss(pid);
    // 1 GiB of nothing (a sparse file: made at once, no disk used), moved over the config.
    const big = path.join(dir, 'big.yaml');
    writeFileSync(big, '');
    truncateSync(big, 1024 * 1024 * 1024);
    renameSync(big, file);
    server.child.kill('SIGHUP');
    await server.waitForStdout(/reload failed; configuration unchanged/, 40_000);
    expect(server.stdout()).toContain('is 1073741824 bytes; at most 4194304 are read');
    const grew = peakRss(pid) - before;
    // The documented parse bound is 256 MB of heap; the file itself is 1 GiB.
    expect(grew).toBeLessThan(256 * 1024 * 1024);
  } finally {
    await killAll();
    cleanup();
  }
}, 60_000);
