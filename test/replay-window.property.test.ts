/**
 * The replay window as a property, over the real SQLite store: a delivery
 * id seen again within its route's window answers the first answer and
 * stores nothing; seen again after the window, it is a new delivery; and a
 * key held by one request makes a concurrent copy wait for its answer.
 */
import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Accepted } from '../engine/actions.ts';
import { createLedger } from '../engine/dispatcher.ts';
import type { ActionStore } from '../engine/queue/action-store.ts';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { tempDir } from './helpers/hookgate.ts';

const temp = tempDir();
let store: ActionStore;
beforeAll(async () => {
  store = await openSqliteStore(temp.dir);
});
afterAll(async () => {
  await store.close();
  temp.cleanup();
});

let serial = 0;
function accepted(): Accepted {
  const id = `action-${++serial}`;
  return {
    actions: [
      {
        kind: 'wake',
        id,
        hook: 'github',
        receivedAt: new Date(0).toISOString(),
        client: '127.0.0.1',
        requestId: id,
        untrusted: true,
        text: 'x',
        mode: 'now',
      },
    ],
    response: { ok: true, id },
  };
}

describe('delivery-id replay window', () => {
  test.prop([fc.integer({ min: 60, max: 259_200 }), fc.integer({ min: 0, max: 600_000 })], {
    numRuns: 40,
  })('a repeat within the window replays, after it is new', async (windowSeconds, laterSeconds) => {
    let nowMs = 1_700_000_000_000;
    const ledger = createLedger(store, { now: () => nowMs });
    const claim = { key: `delivery:github:${++serial}`, windowMs: windowSeconds * 1000 };
    const first = await ledger.hold([claim]);
    expect(first.previous).toBeUndefined();
    const { body } = await ledger.commit(accepted(), [claim]);
    first.release();
    nowMs += laterSeconds * 1000;
    const again = await ledger.hold([claim]);
    again.release();
    if (laterSeconds <= windowSeconds) expect(again.previous?.response).toBe(body);
    else expect(again.previous).toBeUndefined();
  });

  it('a concurrent copy of a held delivery waits, then finds the first answer', async () => {
    const ledger = createLedger(store);
    const claim = { key: `delivery:github:${++serial}`, windowMs: 60_000 };
    const first = await ledger.hold([claim]);
    let settled = false;
    const second = ledger.hold([claim]).then((held) => {
      settled = true;
      return held;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    const { body } = await ledger.commit(accepted(), [claim]);
    first.release();
    const held = await second;
    held.release();
    expect(held.previous?.response).toBe(body);
  });
});
