/**
 * The runtime store contract on the embedded SQLite store: actions accepted
 * through the action store's accept path (its group commit, as the ingress
 * does), the runtime's connections opened on the same file.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { ActionStore } from '../engine/queue/action-store.ts';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunRow } from '../engine/runtime/runtime-store.ts';
import { agentAction, describeRuntimeStore } from './runtime-store-contract.ts';

describeRuntimeStore(
  'SQLite',
  async () => {
    const { dir, cleanup } = tempDir('hookgate-runtime-store-');
    // Opened at the first accept and kept, as the ingress keeps it.
    let accepting: Promise<ActionStore> | undefined;
    return {
      open: async () => SqliteRuntimeStore.open(dir),
      async accept(actions) {
        accepting ??= openSqliteStore(dir);
        const outcome = await (await accepting).appendOrGet({ actions });
        if (!outcome.stored) throw new Error('the actions were not stored');
      },
      async deliveryStates(sourceId) {
        const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
        try {
          const rows = db
            .prepare('SELECT state FROM deliveries WHERE source_id = ? ORDER BY created_at')
            .all(sourceId);
          return rows.map((row) => String(row['state']));
        } finally {
          db.close();
        }
      },
      async backdateRequest(seq, ms) {
        const db = new DatabaseSync(path.join(dir, STORE_FILE));
        try {
          const row = db
            .prepare('SELECT created_at, handled_at FROM control_requests WHERE seq = ?')
            .get(seq);
          const earlier = (at: unknown) =>
            at === null ? null : new Date(Date.parse(String(at)) - ms).toISOString();
          db.prepare(
            'UPDATE control_requests SET created_at = ?, handled_at = ? WHERE seq = ?',
          ).run(earlier(row?.['created_at']), earlier(row?.['handled_at']), seq);
        } finally {
          db.close();
        }
      },
      async requestRows() {
        const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
        try {
          const seqs = (table: string) =>
            db
              .prepare(`SELECT seq FROM ${table} ORDER BY seq`)
              .all()
              .map((row) => Number(row['seq']));
          return { requests: seqs('control_requests'), answers: seqs('control_answers') };
        } finally {
          db.close();
        }
      },
      async cleanup() {
        await (await accepting)?.close();
        cleanup();
      },
    };
  },
  { shared: false },
);

describe('claimNext (the SQLite store runs writes and claims in the order asked)', () => {
  const opened: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of opened.splice(0)) await close();
  });
  async function store() {
    const stores = await openSqliteStores('hookgate-claim-next-');
    opened.push(() => stores.close());
    return stores;
  }
  const claim = (row: RunRow) => ({ id: row.id, attempts: row.attempts });

  it('claims the session’s next run in the transaction that ends its current one', async () => {
    const { runtime, accept } = await store();
    const [a1, a2] = [agentAction('hook:a'), agentAction('hook:a')];
    await accept([a1, a2]);
    const [first] = await runtime.claimHeads(1, new Set());
    expect(first?.id).toBe(a1.id);
    const ended = runtime.finish(claim(first as RunRow), 'done', { status: 'ok' });
    const next = runtime.claimNext('hook:a');
    expect(await ended).toBe(true);
    expect((await next)?.id).toBe(a2.id);
    expect((await runtime.run(a2.id))?.state).toBe('running');
  });

  it('claims nothing when another session waited while the current run ran: its turn is next', async () => {
    const { runtime, accept } = await store();
    const [a1, a2, b1] = [agentAction('hook:a'), agentAction('hook:a'), agentAction('hook:b')];
    await accept([a1, a2, b1]);
    const [first] = await runtime.claimHeads(1, new Set());
    expect(first?.id).toBe(a1.id);
    const ended = runtime.finish(claim(first as RunRow), 'done', { status: 'ok' });
    const next = runtime.claimNext('hook:a');
    expect(await ended).toBe(true);
    expect(await next).toBeUndefined();
    expect((await runtime.run(a2.id))?.state).toBe('queued');
    expect((await runtime.claimHeads(1, new Set())).map((run) => run.id)).toEqual([b1.id]);
  });

  it('claims nothing while the current run did not end, or when the next one waits for its backoff', async () => {
    const { runtime, accept } = await store();
    const [a1, a2] = [agentAction('hook:a'), agentAction('hook:a')];
    await accept([a1, a2]);
    const [first] = await runtime.claimHeads(1, new Set());
    // Its end not written (or undone): the session's head is still the running run.
    expect(await runtime.claimNext('hook:a')).toBeUndefined();
    expect((await runtime.run(a2.id))?.state).toBe('queued');
    // Sent back to wait: the head is due later.
    await runtime.requeue(claim(first as RunRow), 600_000, { status: 'retrying', reason: 'x' });
    expect(await runtime.claimNext('hook:a')).toBeUndefined();
    expect(await runtime.claimNext('hook:none')).toBeUndefined();
  });

  it('claims nothing while a run of the session runs, even behind an older run sent back', async () => {
    const { runtime, accept } = await store();
    const [a1, a2] = [agentAction('hook:a'), agentAction('hook:a')];
    await accept([a1, a2]);
    const [first] = await runtime.claimHeads(1, new Set());
    await runtime.finish(claim(first as RunRow), 'dead', { status: 'error', reason: 'gave up' });
    const [second] = await runtime.claimHeads(1, new Set());
    expect(second?.id).toBe(a2.id);
    // The operator sends the dead one back while a2 runs: it is the session's head again.
    expect(await runtime.retryDead(a1.id)).toBe(true);
    expect(await runtime.claimNext('hook:a')).toBeUndefined();
    expect((await runtime.run(a1.id))?.state).toBe('queued');
  });

  it('claims nothing while an older head of another session waits: the pass gives it the slot', async () => {
    const { runtime, accept } = await store();
    const [a1, b1, a2] = [agentAction('hook:a'), agentAction('hook:b'), agentAction('hook:a')];
    await accept([a1, b1, a2]);
    const [first] = await runtime.claimHeads(1, new Set());
    const ended = runtime.finish(claim(first as RunRow), 'done', { status: 'ok' });
    const next = runtime.claimNext('hook:a');
    expect(await ended).toBe(true);
    expect(await next).toBeUndefined();
    expect((await runtime.claimHeads(1, new Set())).map((row) => row.id)).toEqual([b1.id]);
    // b1 runs now, so it no longer waits: a's next run may follow a's end.
    expect((await runtime.claimNext('hook:a'))?.id).toBe(a2.id);
  });
});
