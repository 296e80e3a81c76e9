/**
 * The transform processes this test process started: its children that run a transform
 * entry. Other children are left out: the suite's files share worker processes, and a library
 * loaded by an earlier file may keep a helper process of its own there.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The engine's own transform process entry. */
export const TRANSFORM_ENTRY = fileURLToPath(
  new URL('../../engine/sandbox/transform-process.ts', import.meta.url),
);

/** Pids of this process's children whose command line runs `entry`. */
export function transformPids(entry: string = TRANSFORM_ENTRY): number[] {
  const tasks = `/proc/${process.pid}/task`;
  return readdirSync(tasks)
    .flatMap((task) =>
      readFileSync(path.join(tasks, task, 'children'), 'utf8')
        .split(' ')
        .filter(Boolean)
        .map(Number),
    )
    .filter((pid) => commandLine(pid).includes(entry));
}

/** A process's arguments, or none once it is gone. */
function commandLine(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}
