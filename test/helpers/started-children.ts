/**
 * The processes a test file started: children of this process that were not there when the
 * file began. The suite's files share worker processes, and a library loaded by an earlier
 * file may keep a helper process of its own there. A child that is exiting still counts
 * until it is reaped, as it did when each file had its process.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** This process's children now. */
function children(): number[] {
  const tasks = `/proc/${process.pid}/task`;
  return readdirSync(tasks).flatMap((task) =>
    readFileSync(path.join(tasks, task, 'children'), 'utf8')
      .split(' ')
      .filter(Boolean)
      .map(Number),
  );
}

/** Call at a file's top level: lists the children started since (pids are not reused while
 * a child of ours holds one, so an earlier child cannot pass for a new one). */
export function childrenFromNow(): () => number[] {
  const before = new Set(children());
  return () => children().filter((pid) => !before.has(pid));
}
