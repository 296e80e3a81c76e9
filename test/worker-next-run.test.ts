/**
 * A session's next run claimed with the end of the one before: only while
 * no head of another session waits before it in turn order, so the worker
 * still starts heads in turn order when a slot frees. The real action worker over the real
 * SQLite store, with a runner the test holds and releases.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, expect, it } from 'vitest';
import type { Runner, RunResult } from '../engine/runtime/runners/runner.ts';
import type { Action } from '../schemas/action.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { waitFor } from './helpers/runtime.ts';
import { testWorker } from './helpers/worker.ts';
import { agentAction } from './runtime-store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const OK: RunResult = { status: 'ok', reply: 'ok' };

/** A worker with `concurrency` slots; runs whose message starts with HOLD wait for `release`. */
async function setup(concurrency: number) {
  const stores = await openSqliteStores('hookgate-next-run-');
  const { dir, runtime: store } = stores;
  const started: string[] = [];
  const held = new Map<string, () => void>();
  const runner: Runner = {
    run(run) {
      const message = run.message.replace('wrapped: ', '');
      started.push(message);
      if (!message.startsWith('HOLD')) return Promise.resolve(OK);
      return new Promise((resolve) => held.set(message, () => resolve(OK)));
    },
  };
  const worker = testWorker(store, runner, { workspace: dir, concurrency, pollMs: 60_000 });
  cleanups.push(async () => {
    await worker.stop();
    await stores.close();
  });
  const accept = async (actions: Action[]) => {
    await stores.accept(actions);
    worker.kick();
  };
  const release = (message: string) => held.get(message)?.();
  return { dir, store, worker, started, held, accept, release };
}

it('a session whose run ends while a freed slot waits for its pass does not jump an older head', async () => {
  const { store, worker, started, held, accept, release } = await setup(2);
  const a1 = agentAction('hook:a', 'HOLD a1');
  const x1 = agentAction('hook:x', 'HOLD x1');
  await accept([a1, x1]);
  await worker.start();
  await waitFor('both held runs to start', () => held.size === 2);
  await accept([
    agentAction('hook:b', 'b1'),
    agentAction('hook:c', 'c1'),
    agentAction('hook:a', 'a2'),
  ]);
  // x1 ends, then a1 ends right after x1's end is stored, before the pass that x1's end asked
  // for has given its slot to b1: a2 must not take a1's slot ahead of c1.
  release('HOLD x1');
  // Checked every event-loop turn: the window between x1's end and the next pass is one turn.
  while ((await store.run(x1.id))?.state !== 'done') await new Promise(setImmediate);
  release('HOLD a1');
  await worker.idle();
  expect(started).toEqual(['HOLD a1', 'HOLD x1', 'b1', 'c1', 'a2']);
});

it('with a slot free and no one waiting, a session runs its backlog in order, one at a time', async () => {
  const { worker, started, accept } = await setup(2);
  const runs = ['a1', 'a2', 'a3', 'a4'].map((message) => agentAction('hook:a', message));
  await accept(runs);
  await worker.start();
  await worker.idle();
  expect(started).toEqual(['a1', 'a2', 'a3', 'a4']);
});

it('with every slot taken, a run that ends hands its slot to the oldest waiting head in the transaction of its end', async () => {
  const { store, worker, started, held, accept, release } = await setup(1);
  const x1 = agentAction('hook:x', 'HOLD x1');
  const b1 = agentAction('hook:b', 'b1');
  await accept([x1, b1, agentAction('hook:c', 'c1')]);
  await worker.start();
  await waitFor('the held run to start', () => held.size === 1);
  release('HOLD x1');
  // Checked every event-loop turn: from the moment x1's end is stored, b1 is claimed.
  while ((await store.run(x1.id))?.state !== 'done') await new Promise(setImmediate);
  expect((await store.run(b1.id))?.state).not.toBe('queued');
  await worker.idle();
  expect(started).toEqual(['HOLD x1', 'b1', 'c1']);
});

it('with every slot taken, a session whose run ends goes behind the sessions that waited; its next run takes the slot when none waits', async () => {
  const { worker, started, accept } = await setup(1);
  await accept([
    agentAction('hook:a', 'a1'),
    agentAction('hook:a', 'a2'),
    agentAction('hook:b', 'b1'),
    agentAction('hook:a', 'a3'),
  ]);
  await worker.start();
  await worker.idle();
  // b1 waited while a1 ran; once b1 is over, no one waits, so a2 and a3 follow each other.
  expect(started).toEqual(['a1', 'b1', 'a2', 'a3']);
});

it("a row no run can take, handed a slot at another run's end, leaves the next choice to the pass", async () => {
  const { dir, store, worker, started, held, accept, release } = await setup(1);
  await accept([agentAction('hook:a', 'HOLD a1')]);
  // Another program's row in session z, between a1 and a2: an agent action without its session.
  const db = new DatabaseSync(path.join(dir, 'hookgate.db'));
  db.prepare(
    "INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES ('bad', 'agent', 'x', 'hook:z', ?, '{\"kind\":\"agent\"}')",
  ).run(new Date().toISOString());
  db.close();
  await accept([agentAction('hook:a', 'a2'), agentAction('hook:b', 'b1')]);
  await worker.start();
  await waitFor('the held run to start', () => held.size === 1);
  release('HOLD a1');
  await worker.idle();
  // The bad row ends and a1's session goes behind b1, which waited while a1 ran.
  expect(started).toEqual(['HOLD a1', 'b1', 'a2']);
  expect((await store.run('bad'))?.state).toBe('dead');
});

it('a run claimed with an end while the worker stops is given back unstarted, its attempt refunded', async () => {
  const { store, worker, started, held, accept, release } = await setup(1);
  const x1 = agentAction('hook:x', 'HOLD x1');
  const b1 = agentAction('hook:b', 'b1');
  await accept([x1, b1]);
  // The worker stops right after the hand-over's claim is made, before it sees the claim.
  let stopping: Promise<void> | undefined;
  const claim = store.claimHeadsAfterEnd.bind(store);
  store.claimHeadsAfterEnd = async (room, busy) => {
    const claims = await claim(room, busy);
    stopping = worker.stop();
    return claims;
  };
  await worker.start();
  await waitFor('the held run to start', () => held.size === 1);
  release('HOLD x1');
  await waitFor('the worker to stop', () => stopping !== undefined);
  await stopping;
  expect(started).toEqual(['HOLD x1']);
  expect(await store.run(b1.id)).toMatchObject({ state: 'queued', attempts: 0 });
  expect((await store.run(x1.id))?.state).toBe('done');
});
