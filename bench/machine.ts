/**
 * Facts about the machine the benchmark reports next to its numbers: how
 * busy the cores already are (other work skews every ratio) and what
 * filesystem the stores live on (a tmpfs would make fsync free).
 */
import { statfsSync } from 'node:fs';
import { cpus } from 'node:os';

function cpuTimes(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of cpus()) {
    const all = times.user + times.nice + times.sys + times.idle + times.irq;
    busy += all - times.idle;
    total += all;
  }
  return { busy, total };
}

/** Share of all cores busy (with other work) during a short sample. */
export async function backgroundLoad(sampleMs = 1000): Promise<number> {
  const before = cpuTimes();
  await new Promise((resolve) => setTimeout(resolve, sampleMs));
  const after = cpuTimes();
  return (after.busy - before.busy) / Math.max(1, after.total - before.total);
}

const FS_TYPES = new Map<number, string>([
  [0xef53, 'ext4'],
  [0x01021994, 'tmpfs'],
  [0x58465342, 'xfs'],
  [0x9123683e, 'btrfs'],
  [0x794c7630, 'overlayfs'],
  [0x6969, 'nfs'],
  [0x2fc12fc1, 'zfs'],
]);

/** A readable name for the filesystem holding `dir`. */
export function filesystemName(dir: string): string {
  const type = statfsSync(dir).type;
  return FS_TYPES.get(type) ?? `0x${type.toString(16)}`;
}
