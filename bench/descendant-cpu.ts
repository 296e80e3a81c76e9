/**
 * CPU time of the processes a benchmark server started itself (hookgate's
 * transform process), which process.cpuUsage() does not count, and of a
 * process tree the bench did not start (the PostgreSQL server): read from
 * /proc/<pid>/stat of every live descendant. Linux only; elsewhere, and for
 * a process that already exited, it counts nothing.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Kernel clock ticks per second of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

type ProcStat = { ppid: number; cpuTicks: number };

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // state ppid ... utime (14th field of the line, 12th here) stime (13th here)
    return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** The parent of a live process (undefined when it is gone). */
export function parentPid(pid: number): number | undefined {
  return readStat(pid)?.ppid;
}

/** User + system CPU time, in µs, of one process (0 when it is gone). */
export function processCpuMicros(pid: number): number {
  const stat = readStat(pid);
  return stat ? (stat.cpuTicks * 1_000_000) / TICKS_PER_SECOND : 0;
}

/** User + system CPU time, in µs, of the live descendants of `rootPid` (this process by default). */
export function descendantCpuMicros(rootPid: number = process.pid): number {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return 0;
  }
  const stats = new Map<number, ProcStat>();
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat) stats.set(Number(entry), stat);
  }
  const inTree = new Set([rootPid]);
  let ticks = 0;
  // Parents have lower pids in the usual case; repeat until no new descendant turns up.
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, stat] of stats) {
      if (inTree.has(pid) || !inTree.has(stat.ppid)) continue;
      inTree.add(pid);
      ticks += stat.cpuTicks;
      grew = true;
    }
  }
  return (ticks * 1_000_000) / TICKS_PER_SECOND;
}
