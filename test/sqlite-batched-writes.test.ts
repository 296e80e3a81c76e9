/**
 * The SQLite runtime store writes a run's lifecycle in batches: the writes
 * asked for in one event-loop turn share one transaction. Each stands or
 * falls alone, each is committed (seen by another connection) once its
 * promise resolves, and closing the store writes what was waiting.
 */
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ActionStore } from '../engine/queue/action-store.ts';
import type { NewEvent, RunRow } from '../engine/runtime/runtime-store.ts';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './helpers/hookgate.ts';
import { agentAction } from './runtime-store-contract.ts';

const event = (text: string, actionId: string): NewEvent => ({
  sessionKey: 'main',
  text,
  source: 'hook-summary',
  actionId,
  trusted: false,
});
const ownerOf = (row: RunRow) => ({
  agentId: 'main',
  sessionKey: row.action.kind === 'agent' ? row.action.sessionKey : '',
  kind: 'agent' as const,
});
const turnsOf = (row: RunRow) => ({ owner: ownerOf(row), prompt: 'asked', reply: 'answered' });

describe('batched lifecycle writes (SQLite)', () => {
  let dir: string;
  let cleanup: () => void;
  let accepting: ActionStore;
  let store: SqliteRuntimeStore;

  beforeEach(async () => {
    ({ dir, cleanup } = tempDir('hookgate-batched-'));
    accepting = await openSqliteStore(dir);
    store = SqliteRuntimeStore.open(dir);
  });
  afterEach(async () => {
    await store.close();
    await accepting.close();
    cleanup();
  });

  /** Three runs of three sessions, claimed. */
  async function claimThree(): Promise<RunRow[]> {
    const actions = ['hook:a', 'hook:b', 'hook:c'].map((key) => agentAction(key));
    const outcome = await accepting.appendOrGet({ actions });
    expect(outcome.stored).toBe(true);
    const rows = await store.claimHeads(3, new Set());
    expect(rows.map((row) => row.id)).toEqual(actions.map((action) => action.id));
    return rows;
  }

  /** Another connection's view: what was committed. */
  function committed(sql: string, ...params: string[]): unknown[] {
    const db = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
    try {
      return db.prepare(sql).all(...params);
    } finally {
      db.close();
    }
  }

  it('a write that fails in a shared batch is undone alone; the others are committed', async () => {
    const [a, b, c] = (await claimThree()) as [RunRow, RunRow, RunRow];
    const side = new DatabaseSync(path.join(dir, STORE_FILE));
    side.exec(`CREATE TRIGGER refuse BEFORE INSERT ON system_events WHEN NEW.text = 'boom'
      BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    side.close();

    // Asked for in one turn: one batch.
    const results = await Promise.allSettled([
      store.finish(a, 'done', { status: 'ok', reply: 'a' }, event('a ended', a.id), turnsOf(a)),
      store.finish(b, 'done', { status: 'ok', reply: 'b' }, event('boom', b.id), turnsOf(b)),
      store.finish(c, 'done', { status: 'ok', reply: 'c' }, event('c ended', c.id), turnsOf(c)),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/refused by the test/);

    expect(committed('SELECT id, state FROM actions ORDER BY seq')).toEqual([
      { id: a.id, state: 'done' },
      { id: b.id, state: 'running' },
      { id: c.id, state: 'done' },
    ]);
    expect(committed('SELECT text FROM system_events ORDER BY seq')).toEqual([
      { text: 'a ended' },
      { text: 'c ended' },
    ]);
    // Nothing half-written for the refused one: no turns either.
    expect(committed('SELECT run_id FROM session_turns ORDER BY seq')).toEqual([
      { run_id: a.id },
      { run_id: a.id },
      { run_id: c.id },
      { run_id: c.id },
    ]);
    // It can end later, once the store takes it.
    expect(await store.finish(b, 'failed', { status: 'error', reason: 'later' })).toBe(true);
  });

  it('a write is committed once its promise resolves', async () => {
    const [a] = (await claimThree()) as [RunRow];
    const ending = store.finish(a, 'done', { status: 'ok', reply: 'a' }, event('a ended', a.id));
    // Not yet written: the batch goes at the end of the turn.
    expect(committed('SELECT state FROM actions WHERE id = ?', a.id)).toEqual([
      { state: 'running' },
    ]);
    expect(await ending).toBe(true);
    expect(committed('SELECT state FROM actions WHERE id = ?', a.id)).toEqual([{ state: 'done' }]);
  });

  it('a write asked for after the close (a late timer) is refused, and the process goes on', async () => {
    await store.close();
    await expect(store.addEvent(event('too late', 'none'))).rejects.toThrow(/closed/);
    store = SqliteRuntimeStore.open(dir);
    expect(committed('SELECT text FROM system_events')).toEqual([]);
  });

  it('closing the store writes what was waiting', async () => {
    const [a] = (await claimThree()) as [RunRow];
    const ending = store.finish(a, 'done', { status: 'ok', reply: 'a' }, event('a ended', a.id));
    await store.close();
    expect(await ending).toBe(true);
    expect(committed('SELECT state FROM actions WHERE id = ?', a.id)).toEqual([{ state: 'done' }]);
    store = SqliteRuntimeStore.open(dir);
  });
});
