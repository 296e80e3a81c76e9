/**
 * Two ledgers over one store stand for two instances sharing it: each holds
 * keys only in its own process, so both can look a key up, find nothing and
 * go on. The store's atomic check-and-append must then keep one action per
 * key and give the later request the first answer (or a conflict).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Accepted } from '../engine/actions.ts';
import { createLedger, type KeyClaim } from '../engine/dispatcher.ts';
import type { HookError } from '../engine/errors.ts';
import type { Exchange } from '../engine/ingress/exchange.ts';
import { replayAnswer } from '../engine/ingress/replay.ts';
import type { ActionStore } from '../engine/queue/action-store.ts';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { sampleAction } from './store-contract.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sharedStore(): Promise<ActionStore> {
  const temp = tempDir('hookgate-ledger-');
  const store = await openSqliteStore(temp.dir);
  cleanups.push(temp.cleanup, () => store.close());
  return store;
}

function acceptedWith(text: string): Accepted {
  const action = sampleAction(text);
  return { actions: [action], response: { ok: true, actionId: action.id } };
}

const callerKey = (fingerprint: string): KeyClaim => ({
  key: 'caller:order-1',
  fingerprint,
  windowMs: 60_000,
});

describe('two instances sharing one store', () => {
  it('a repeat that missed the look-up gets the first 200 and stores nothing', async () => {
    const store = await sharedStore();
    const [a, b] = [createLedger(store), createLedger(store)];
    const claims = [callerKey('same')];
    // Both look the key up before either commits: neither sees the other.
    const heldA = await a.hold(claims);
    const heldB = await b.hold(claims);
    expect([heldA.previous, heldB.previous]).toEqual([undefined, undefined]);
    const first = acceptedWith('first');
    const committedA = await a.commit(first, claims);
    const committedB = await b.commit(acceptedWith('second'), claims);
    expect(committedA).toEqual({ body: JSON.stringify(first.response) });
    expect(committedB.previous?.response).toBe(JSON.stringify(first.response));
    const listed = await store.listActions({ limit: 10 });
    expect(listed.map((row) => row.action.id)).toEqual([first.actions[0]?.id]);
    // The later request is answered with the first body, marked as a replay.
    const x = { log: {} } as Exchange;
    expect(replayAnswer(x, claims, committedB.previous ?? fail())).toEqual({
      kind: 'json',
      status: 200,
      body: JSON.stringify(first.response),
      replayed: true,
    });
  });

  it('a different request under the same caller key is a conflict, not a second action', async () => {
    const store = await sharedStore();
    const [a, b] = [createLedger(store), createLedger(store)];
    await a.hold([callerKey('one')]);
    await b.hold([callerKey('two')]);
    await a.commit(acceptedWith('one'), [callerKey('one')]);
    const committed = await b.commit(acceptedWith('two'), [callerKey('two')]);
    const previous = committed.previous ?? fail();
    expect(() => replayAnswer({ log: {} } as Exchange, [callerKey('two')], previous)).toThrow(
      expect.objectContaining({ code: 'idempotency_conflict' }) as HookError,
    );
    expect(await store.listActions({ limit: 10 })).toHaveLength(1);
  });
});

function fail(): never {
  throw new Error('expected an earlier record');
}
