/**
 * What the SQLite store's acceptance costs per /wake, apart from the server:
 * `node bench/accept-store.ts [GROUPS]`. Through the real store (group
 * writer, wakes applied at acceptance as `hookgate serve` does), GROUPS
 * groups of 8, 16, 24 and 32 wakes each (one group per event-loop turn, as
 * the server's requests make them) are committed: CPU per wake (user +
 * kernel; the COMMIT's fsync wait is not CPU), WAL frames per group and KB
 * written per wake, then the frames a group writes by table or index. The
 * bench prints the server's own group size ("actions each" on its store
 * line); this shows what that size costs. The store's checkpoint
 * threshold (10,000 pages) is above what a size's run writes, so the WAL's
 * growth is what was written.
 */
import { randomUUIDv7 } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { wrapUntrusted } from '../engine/safety.ts';
import {
  openSqliteStore,
  type SqliteActionStore,
  STORE_FILE,
} from '../engine/store/sqlite/action-store.ts';
import type { Action } from '../schemas/action.ts';
import { framePages, framesIn } from './wal-frames.ts';

const GROUPS = Number(process.argv[2] ?? 200);
const WARM_GROUPS = 20;
const SAMPLED_GROUPS = 40;
// The store's pages (SQLite's default).
const PAGE_SIZE = 4096;
// The bench's /wake text: its 221-byte body less the JSON around it.
const TEXT = 'x'.repeat(183);

// Wrapped once: the wrapper's work is the request path's, not the store's.
const WRAPPER_ID = wrapUntrusted(TEXT, 'Webhook').id;

function wakeAction(): Action {
  return {
    kind: 'wake',
    id: randomUUIDv7(),
    hook: 'wake',
    receivedAt: new Date().toISOString(),
    client: '127.0.0.1',
    requestId: randomUUIDv7(),
    untrusted: true,
    verification: { scheme: 'token' },
    safety: { wrapperId: WRAPPER_ID, label: 'Webhook', patterns: [], neutralised: 0 },
    text: TEXT,
    mode: 'now',
  } as Action;
}

/** One group: `size` appends in one event-loop turn, each its own request. */
function group(store: SqliteActionStore, size: number): Promise<unknown> {
  return Promise.all(Array.from({ length: size }, () => store.appendOrGet({ actions: [wakeAction()] })));
}

async function measure(size: number): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-accept-store-'));
  try {
    const store = await openSqliteStore(dir);
    store.applyWakesOnAccept('main');
    for (let i = 0; i < WARM_GROUPS; i++) await group(store, size);
    const wal = path.join(dir, `${STORE_FILE}-wal`);
    const walBefore = statSync(wal).size;
    const cpu = process.cpuUsage();
    for (let i = 0; i < GROUPS; i++) await group(store, size);
    const used = process.cpuUsage(cpu);
    const written = statSync(wal).size - walBefore;
    const wakes = GROUPS * size;
    console.log(
      `${size} wakes per group: ${((used.user + used.system) / wakes).toFixed(1)} µs CPU per wake ` +
        `(${(used.system / wakes).toFixed(1)} kernel), ` +
        `${(framesIn(written, PAGE_SIZE) / GROUPS).toFixed(1)} WAL frames per group, ` +
        `${(written / wakes / 1024).toFixed(2)} KB written per wake`,
    );
    if (size === 24) {
      const before = statSync(wal).size;
      for (let i = 0; i < SAMPLED_GROUPS; i++) await group(store, size);
      const reader = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
      const pages = framePages(readFileSync(wal).subarray(before), PAGE_SIZE, reader);
      reader.close();
      const frames = new Map<string, number>();
      for (const page of pages) {
        const owner = page.slice(0, page.lastIndexOf('#'));
        frames.set(owner, (frames.get(owner) ?? 0) + 1);
      }
      const byOwner = [...frames].sort((a, b) => b[1] - a[1]);
      console.log(
        `  frames per group by table or index (${SAMPLED_GROUPS} groups): ` +
          byOwner.map(([owner, n]) => `${owner} ${(n / SAMPLED_GROUPS).toFixed(1)}`).join(', '),
      );
    }
    await store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const size of [8, 16, 24, 32]) await measure(size);
