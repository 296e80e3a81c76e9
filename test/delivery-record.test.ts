/**
 * A delivery's record and its run's end: written together when the run is
 * still this claim's, and on its own (once) when another instance took the
 * run over, so what this instance did is on record either way; the outcome
 * published for the metrics once. The delivery step over the real SQLite
 * runtime store, with no channel configured (the reply's delivery is
 * skipped, which is recorded as any other outcome).
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { deliveryFinished } from '../engine/observe/events.ts';
import { createDeliveryStep } from '../engine/runtime/reply-delivery.ts';
import type { RunRow } from '../engine/runtime/runtime-store.ts';
import { STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import type { AgentAction } from '../schemas/action.ts';
import { NO_HEARTBEAT } from './helpers/heartbeat.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { agentAction } from './runtime-store-contract.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A claimed agent run asking for delivery, the delivery step, and what a reader sees. */
async function setup() {
  const stores = await openSqliteStores('hookgate-delivery-record-');
  const { dir, runtime: store } = stores;
  cleanups.push(() => stores.close());
  const action: AgentAction = { ...agentAction('hook:record'), deliver: true };
  await stores.accept([action]);
  const [row] = await store.claimHeads(1, new Set());
  if (!row) throw new Error('not claimed');
  const deliver = createDeliveryStep({
    store,
    adapters: new Map(),
    heartbeat: NO_HEARTBEAT,
    logger: pino({ level: 'silent' }),
    settings: {
      mainKey: 'main',
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      lastRoute: { pinned: false, ownerRoutes: [] },
    },
    signal: new AbortController().signal,
    stopped: () => false,
    kick: () => undefined,
  });
  const published: string[] = [];
  const listener = (message: unknown) => published.push((message as { outcome: string }).outcome);
  deliveryFinished.subscribe(listener);
  cleanups.push(() => {
    deliveryFinished.unsubscribe(listener);
  });
  const records = () => {
    const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
    try {
      return db
        .prepare('SELECT state FROM deliveries WHERE source_id = ?')
        .all(action.id)
        .map((r) => r['state']);
    } finally {
      db.close();
    }
  };
  return { store, row, action, deliver, published, records };
}

it('a run still this claim’s: its delivery recorded once, with its end, published once', async () => {
  const { store, row, action, deliver, published, records } = await setup();
  await deliver(row, action, 'the reply');
  expect(records()).toEqual(['skipped']);
  expect(published).toEqual(['skipped']);
  expect((await store.run(action.id))?.state).toBe('done');
});

it('a run taken over elsewhere: this instance’s delivery still recorded, once, published once', async () => {
  const { store, row, action, deliver, published, records } = await setup();
  const stale: RunRow = { ...row, attempts: row.attempts + 1 };
  await deliver(stale, action, 'the reply');
  expect(records()).toEqual(['skipped']);
  expect(published).toEqual(['skipped']);
  // The end was not this claim's to write.
  expect((await store.run(action.id))?.state).toBe('running');
});
