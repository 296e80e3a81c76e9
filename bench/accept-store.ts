/**
 * What the SQLite store's acceptance costs per /wake, apart from the server:
 * `npx node bench/accept-store.ts [GROUPS]`. Through the real store (group
 * writer, wakes applied at acceptance as `hookgate serve` does), GROUPS
 * groups of 8, 16, 24 and 32 wakes each (the bench's /wake body through the
 * server's builder; one group per event-loop turn, as the server's requests
 * make them) are committed: CPU per wake (user + kernel, the commits' alone;
 * the fsync's wait is not CPU), WAL frames per group and KB written per wake,
 * then the frames a group writes by table or index. The bench prints the
 * server's own group size ("actions each" on its store line); this shows
 * what that size costs. The WAL's growth is what was
 * written as long as no checkpoint restarted it (its salts change then: the
 * probe stops and says so; fewer GROUPS stay under the store's threshold).
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import {
  openSqliteStore,
  type SqliteActionStore,
  STORE_FILE,
} from '../engine/store/sqlite/action-store.ts';
import { probeWake } from './probe-actions.ts';
import { countFrames, readFrames, readPageSize, readSalts } from './wal-frames.ts';

const GROUPS = Number(process.argv[2] ?? 200);
const WARM_GROUPS = 20;
const SAMPLED_GROUPS = 40;

/**
 * Commit `count` groups of `size` wakes, each group's appends in one event-loop turn, each its
 * own request; the CPU taken by the commits alone. A group's actions are built just before it,
 * as the server's requests make them (node's UUIDv7 ids are ordered only to the millisecond:
 * built all at once, thousands would share one and land all over the id index).
 */
async function commit(store: SqliteActionStore, count: number, size: number): Promise<number> {
  let micros = 0;
  for (let i = 0; i < count; i++) {
    const wakes = Array.from({ length: size }, probeWake);
    const before = process.cpuUsage();
    await Promise.all(wakes.map((wake) => store.appendOrGet({ actions: [wake] })));
    const used = process.cpuUsage(before);
    micros += used.user + used.system;
  }
  return micros;
}

/** The WAL's bytes, failing when a checkpoint restarted it since `salts` were read. */
function readWal(file: string, salts: string): Buffer {
  const wal = readFileSync(file);
  if (readSalts(wal) !== salts) {
    throw new Error('the store checkpointed its WAL during the measurement: run with fewer GROUPS');
  }
  return wal;
}

async function measure(size: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-accept-store-'));
  try {
    const store = await openSqliteStore(dir);
    store.applyWakesOnAccept('main');
    await commit(store, WARM_GROUPS, size);
    const file = path.join(dir, `${STORE_FILE}-wal`);
    const start = readFileSync(file);
    const pageSize = readPageSize(start);
    const salts = readSalts(start);
    const micros = await commit(store, GROUPS, size);
    const written = readWal(file, salts).length - start.length;
    const wakes = GROUPS * size;
    console.log(
      `${size} wakes per group: ${(micros / wakes).toFixed(1)} µs CPU per wake, ` +
        `${(countFrames(written, pageSize) / GROUPS).toFixed(1)} WAL frames per group, ` +
        `${(written / wakes / 1024).toFixed(2)} KB written per wake`,
    );
    if (size === 24) {
      const before = statSync(file).size;
      await commit(store, SAMPLED_GROUPS, size);
      const reader = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
      const frames = readFrames(readWal(file, salts).subarray(before), pageSize, reader);
      reader.close();
      const perOwner = new Map<string, number>();
      for (const { owner } of frames) perOwner.set(owner, (perOwner.get(owner) ?? 0) + 1);
      const largestFirst = [...perOwner].sort((a, b) => b[1] - a[1]);
      console.log(
        `  frames per group by table or index (${SAMPLED_GROUPS} groups): ` +
          largestFirst.map(([owner, n]) => `${owner} ${(n / SAMPLED_GROUPS).toFixed(1)}`).join(', '),
      );
    }
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  for (const size of [8, 16, 24, 32]) await measure(size);
} catch (err) {
  console.error(`accept-store: ${(err as Error).message}`);
  process.exitCode = 1;
}
