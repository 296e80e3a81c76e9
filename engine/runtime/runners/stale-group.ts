/**
 * Ending, at a start, the process group a runner had when the process that
 * started it died. The id was recorded then; by now (a reboot, days later,
 * the watchdog having ended the group at once) it may name an unrelated
 * program's group, or another run's, which must not be killed. The group is
 * known by its members' environment: each runner (and its watchdog) was
 * started with HOOKGATE_RUN_ID set to its run's id, which no other program,
 * and no other run, carries.
 * Where /proc cannot be read (not Linux) the group is ended as recorded.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { killGroup } from './command.ts';

const MARK = 'HOOKGATE_RUN_ID=';

/** The process group of a /proc stat line (after the name, which may hold spaces and parentheses). */
function groupOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    // Gone meanwhile, or another user's: not a group this process could end anyway.
    return undefined;
  }
}

/** Whether a live member of group `pgid` was started for run `runId`; true without /proc. */
export function isRunnerGroup(pgid: number, runId: string, proc = '/proc'): boolean {
  const mark = `${MARK}${runId}`;
  let pids: string[];
  try {
    pids = readdirSync(proc).filter((name) => /^\d+$/.test(name));
  } catch {
    return true;
  }
  return pids.some((pid) => {
    const stat = read(`${proc}/${pid}/stat`);
    if (stat === undefined || groupOf(stat) !== pgid) return false;
    return read(`${proc}/${pid}/environ`)
      ?.split('\0')
      .some((entry) => entry === mark);
  });
}

/** SIGKILL a recorded runner group left by a previous process, if it is still that run's. */
export function endStaleGroup(pgid: number, runId: string): void {
  if (isRunnerGroup(pgid, runId)) killGroup(pgid);
}
