/**
 * The runtime is fair: the worker claims the head of each session, in turns
 * (a session whose run ended goes behind the sessions that waited), so a
 * backlog of any size in one session, or a head waiting for its backoff,
 * holds back only that session, and the main session's wakes wait for
 * nobody. Real server on port 0, real store, real runners:
 * the steerable HTTP agent (test/helpers/gate-agent.ts) and the command test
 * agent (test/fixtures/agent.mjs), each able to hold a run until released.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { openDatabase } from '../engine/store/sqlite/schema.ts';
import type { Claim } from '../engine/runtime/runtime-store.ts';
import { ringDoorbell } from '../engine/store/sqlite/doorbell.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { fc, test } from '@fast-check/vitest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type GateAgent, startGateAgent } from './helpers/gate-agent.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import {
  agentRunner,
  killAgentGroups,
  query,
  readRecords,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';

const BACKLOG = 200;
// No delivery and no heartbeat after a run: the agent sees only the runs under test.
const QUIET = { deliver: false, wakeMode: 'next-heartbeat' };
// Generous: a loaded 2-core machine.
const WAIT_MS = 30_000;

type Env = {
  server: TestServer;
  dataDir: string;
  /** Accept an agent run (or a wake) and return its id. */
  post(hook: 'agent' | 'wake', body: Record<string, unknown>): Promise<string>;
  state(id: string): string | undefined;
};

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Start hookgate with the runtime on and `runner` as every agent's runner. */
async function boot(runner: Record<string, unknown>, concurrency = 4): Promise<Env> {
  const { dir, cleanup } = tempDir('hookgate-fair-');
  const server = await startTestServer(
    {
      hooks: { allowRequestSessionKey: true },
      agents: { defaults: { timeoutSeconds: 60, runner }, list: [{ id: 'main', default: true }] },
      runtime: {
        concurrency,
        // A run that did not happen waits at least ten minutes before its next attempt.
        retry: { maxAttempts: 5, baseDelayMs: 600_000, maxDelayMs: 600_000 },
        heartbeat: { every: 'off' },
      },
    },
    { dataDir: dir, runtime: true },
  );
  cleanups.push(async () => {
    await server.stop();
    cleanup();
  });
  return {
    server,
    dataDir: dir,
    async post(hook, body) {
      const res = await server.post(hook, body);
      const json = (await res.json()) as Record<string, unknown>;
      expect(res.status, JSON.stringify(json)).toBe(200);
      return String(json['runId'] ?? json['id']);
    },
    state(id) {
      const [row] = query(dir, 'SELECT state FROM actions WHERE id = ?', id);
      return row ? String(row['state']) : undefined;
    },
  };
}

async function gateAgent(): Promise<GateAgent> {
  const agent = await startGateAgent();
  // Registered first, so it closes after the server (cleanups run in reverse).
  cleanups.unshift(() => agent.close());
  return agent;
}

/** Accept `count` runs in one session, in order; returns their ids. */
async function backlog(
  env: Env,
  sessionKey: string,
  count: number,
  message: (i: number) => string,
) {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    ids.push(await env.post('agent', { message: message(i), sessionKey, ...QUIET }));
  }
  return ids;
}

function states(env: Env, ids: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of ids) {
    const state = env.state(id) ?? 'missing';
    counts[state] = (counts[state] ?? 0) + 1;
  }
  return counts;
}

describe('a backlog in one session', () => {
  it("a 200-action backlog in one session does not delay another session's run", async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url });
    const bulk = await backlog(env, 'hook:bulk', BACKLOG, (i) => `HOLD bulk #${i}`);
    await waitFor('the backlog head to reach the agent', () => agent.calls.length === 1, WAIT_MS);

    const other = await env.post('agent', {
      message: 'hello',
      sessionKey: 'hook:other',
      ...QUIET,
    });
    expect((await waitForFinal(env.dataDir, other, WAIT_MS)).state).toBe('done');

    // The backlog is still there, untouched behind its held head.
    expect(states(env, bulk)).toEqual({ running: 1, queued: BACKLOG - 1 });
    expect(agent.calls.map((call) => call.runId)).toEqual([bulk[0], other]);
  });

  it("a backlog held by a blocked command runner does not delay another session's run", async () => {
    const { dir, cleanup } = tempDir('hookgate-fair-agent-');
    const record = path.join(dir, 'agent.jsonl');
    const gate = path.join(dir, 'gate');
    cleanups.push(async () => {
      writeFileSync(gate, '');
      killAgentGroups(readRecords(record));
      cleanup();
    });
    const env = await boot(agentRunner(record));
    const bulk = await backlog(env, 'static-key', BACKLOG, (i) => `HOLD:${gate} bulk #${i}`);

    const other = await env.post('agent', {
      message: 'hello',
      sessionKey: 'hook:other',
      ...QUIET,
    });
    expect((await waitForFinal(env.dataDir, other, WAIT_MS)).state).toBe('done');
    expect(states(env, bulk)).toEqual({ running: 1, queued: BACKLOG - 1 });
    const started = readRecords(record).filter((r) => r.phase === 'start');
    expect(started.map((r) => r.sessionKey).sort()).toEqual(['hook:other', 'static-key']);
  });

  it('a session whose head waits for backoff does not block other sessions', async () => {
    const agent = await gateAgent();
    // Fewer slots than sessions in backoff: a waiting head must not hold a slot either.
    const env = await boot({ kind: 'http', url: agent.url }, 2);
    const waiting: string[] = [];
    for (const key of ['hook:flaky-a', 'hook:flaky-b', 'hook:flaky-c']) {
      const [head, ...rest] = await backlog(env, key, 90, (i) =>
        i === 0 ? 'BUSY' : `after #${i}`,
      );
      waiting.push(head as string, ...rest);
      await waitFor(
        `the head of ${key} to wait for its backoff`,
        () => {
          const [row] = query(
            env.dataDir,
            'SELECT state, attempts, next_attempt_at_ms FROM actions WHERE id = ?',
            head as string,
          );
          return row?.['state'] === 'queued' && Number(row['attempts']) === 1;
        },
        WAIT_MS,
      );
    }

    const other = await env.post('agent', {
      message: 'hello',
      sessionKey: 'hook:other',
      ...QUIET,
    });
    expect((await waitForFinal(env.dataDir, other, WAIT_MS)).state).toBe('done');
    // Each waiting session was tried once (its head only); nothing behind a head ran.
    expect(states(env, waiting)).toEqual({ queued: waiting.length });
    const heads = [0, 90, 180].map((i) => waiting[i]);
    expect(agent.calls.map((call) => call.runId)).toEqual([...heads, other]);
  });

  it('order within the backlogged session is kept', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url });
    const bulk = await backlog(env, 'hook:bulk', BACKLOG, (i) => (i === 0 ? 'HOLD #0' : `#${i}`));
    const others: string[] = [];
    for (let i = 0; i < 5; i++) {
      others.push(
        await env.post('agent', {
          message: `other ${i}`,
          sessionKey: `hook:o${i}`,
          ...QUIET,
        }),
      );
    }
    for (const id of others)
      expect((await waitForFinal(env.dataDir, id, WAIT_MS)).state).toBe('done');
    agent.release();
    for (const id of bulk)
      expect((await waitForFinal(env.dataDir, id, WAIT_MS)).state).toBe('done');

    const runs = agent.calls.filter((call) => call.sessionKey === 'hook:bulk');
    // Each action ran once, in acceptance order, never two of the session at a time.
    expect(runs.map((call) => call.runId)).toEqual(bulk);
    expect(runs.every((call) => call.concurrentInSession === 0)).toBe(true);
  });
});

describe('every slot taken', () => {
  it("a session's next run waits for an older head of another session", async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url }, 1);
    const a1 = await env.post('agent', { message: 'HOLD a1', sessionKey: 'hook:a', ...QUIET });
    await waitFor('a1 to reach the agent', () => agent.calls.length === 1, WAIT_MS);
    const b1 = await env.post('agent', { message: 'b1', sessionKey: 'hook:b', ...QUIET });
    const a2 = await env.post('agent', { message: 'a2', sessionKey: 'hook:a', ...QUIET });
    agent.release();
    for (const id of [a1, b1, a2])
      expect((await waitForFinal(env.dataDir, id, WAIT_MS)).state).toBe('done');
    // The one slot went to the oldest head when a1 ended: b1's, not a2 after a1 in its session.
    expect(agent.calls.map((call) => call.runId)).toEqual([a1, b1, a2]);
  });

  it('a session with a backlog takes turns with a session whose run came after all of it', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url }, 1);
    const bulk = await backlog(env, 'hook:bulk', 11, (i) => (i === 0 ? 'HOLD #0' : `#${i}`));
    await waitFor('the first run to reach the agent', () => agent.calls.length === 1, WAIT_MS);
    const other = await env.post('agent', { message: 'other', sessionKey: 'hook:other', ...QUIET });
    agent.release();
    for (const id of [...bulk, other])
      expect((await waitForFinal(env.dataDir, id, WAIT_MS)).state).toBe('done');
    // The other session waited while the backlog's first run ran: its run is second, not
    // twelfth, and the backlog then goes on in its order.
    const [first, ...rest] = bulk;
    expect(agent.calls.map((call) => call.runId)).toEqual([first, other, ...rest]);
  });
});

describe('the main session', () => {
  it('main-session wakes are not delayed by a backlog', async () => {
    const agent = await gateAgent();
    // Every slot is taken by a held session with a backlog behind it.
    const env = await boot({ kind: 'http', url: agent.url }, 2);
    const held = [
      ...(await backlog(env, 'hook:bulk-a', BACKLOG, (i) => `HOLD a #${i}`)),
      ...(await backlog(env, 'hook:bulk-b', 50, (i) => `HOLD b #${i}`)),
    ];
    await waitFor('both slots to be taken', () => agent.calls.length === 2, WAIT_MS);

    const wakes = [];
    for (const text of ['Deploy finished', 'Backup verified']) {
      wakes.push(await env.post('wake', { text, mode: 'next-heartbeat' }));
    }
    for (const id of wakes)
      expect((await waitForFinal(env.dataDir, id, WAIT_MS)).state).toBe('done');
    const events = query(
      env.dataDir,
      "SELECT action_id FROM system_events WHERE session_key = 'main' AND source = 'wake' ORDER BY seq",
    );
    expect(events.map((row) => row['action_id'])).toEqual(wakes);
    expect(states(env, held)).toEqual({ running: 2, queued: held.length - 2 });
  });
});

describe('session heads in an existing store', () => {
  /** Run SQL on the store file over a plain connection (no schema work). */
  function sql(dataDir: string, text: string): void {
    const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { timeout: 10_000 });
    try {
      db.exec(text);
    } finally {
      db.close();
    }
  }

  /** Store an action with the group writer's statement (a wake without a session key). */
  function insert(dataDir: string, sessionKey: string | null, id: string): string {
    const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { timeout: 10_000 });
    try {
      db.prepare(
        'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(id, sessionKey ? 'agent' : 'wake', 'agent', sessionKey, new Date().toISOString(), '{}');
    } finally {
      db.close();
    }
    return id;
  }

  function openStore(dataDir: string): SqliteRuntimeStore {
    const store = SqliteRuntimeStore.open(dataDir);
    cleanups.push(async () => store.close());
    return store;
  }

  it('a dead action sent back with retry runs before the work accepted after it in its session', async () => {
    const { dir, cleanup } = tempDir('hookgate-fair-store-');
    cleanups.push(async () => cleanup());
    const store = openStore(dir);
    const first = insert(dir, 'hook:s', 'a-1');
    insert(dir, 'hook:s', 'a-2');
    insert(dir, 'hook:t', 'b-1');
    const claim = store.claim(first);
    expect(claim?.attempts).toBe(1);
    expect(await store.finish(claimed(claim), 'dead', { status: 'error', reason: 'gave up' })).toBe(
      true,
    );
    // Its turn ended: the session waits behind b-1, which waited while a-1 ran.
    expect(store.dueHeads(Date.now(), 10).map((head) => head.id)).toEqual(['b-1', 'a-2']);

    expect(await store.retryDead(first)).toBe(true);
    expect(store.dueHeads(Date.now(), 10).map((head) => head.id)).toEqual(['b-1', 'a-1']);
  });

  it('wakes keep no session head: accepting and ending them leaves session_heads to agent sessions', async () => {
    const { dir, cleanup } = tempDir('hookgate-fair-wakes-');
    cleanups.push(async () => cleanup());
    const store = openStore(dir);
    insert(dir, null, 'w-1');
    insert(dir, 'hook:s', 'a-1');
    const lanes = () =>
      query(dir, 'SELECT lane FROM session_heads ORDER BY lane').map((r) => r['lane']);
    expect(lanes()).toEqual(['hook:s']);
    expect(store.pendingWakes(10)).toEqual(['w-1']);
  });

  it('a store written before session heads existed is migrated at open, its pending work included', async () => {
    const { dir, cleanup } = tempDir('hookgate-fair-migrate-');
    cleanups.push(async () => cleanup());
    // Build the previous layout: no heads table, index or triggers (schema version 3).
    openDatabase(dir, { create: true }).close();
    sql(
      dir,
      `DROP TRIGGER actions_head_insert; DROP TRIGGER actions_head_state;
       DROP TRIGGER actions_head_backoff; DROP TABLE session_heads;
       DROP INDEX actions_session_pending; DROP INDEX system_events_copies;
       ALTER TABLE system_events DROP COLUMN copy_of;
       ALTER TABLE gmail_mailboxes DROP COLUMN watch_error; PRAGMA user_version = 3;`,
    );
    for (const id of ['x-1', 'x-2', 'y-1', 'x-3', 'y-2']) insert(dir, `hook:${id[0]}`, id);
    insert(dir, null, 'wake-1');
    sql(
      dir,
      `UPDATE actions SET state = 'done' WHERE id = 'x-1';
       UPDATE actions SET state = 'running' WHERE id = 'x-2';`,
    );

    const store = openStore(dir);
    await store.recoverInterrupted();
    expect(store.dueHeads(Date.now(), 10).map((head) => head.id)).toEqual(['x-2', 'y-1']);
    expect(store.pendingWakes(10)).toEqual(['wake-1']);
    // The triggers are there too: a finished head hands over to the next of its session.
    await store.finish(claimed(store.claim('y-1')), 'done', { status: 'ok' });
    expect(store.dueHeads(Date.now(), 10).map((head) => head.id)).toEqual(['x-2', 'y-2']);
  });
});

describe('session heads follow every change', () => {
  const NOW = 1_000_000;
  const SESSIONS = ['hook:a', 'hook:b', 'hook:c', null] as const;
  type Model = {
    id: string;
    session: string | null;
    state: string;
    nextAt: number;
    claim?: Claim;
  };
  // Weighted towards backlogs whose runs end while other sessions wait (turn order).
  const step = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('insert' as const), s: fc.nat(3) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('claim' as const), s: fc.nat(2) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('finish' as const),
        s: fc.nat(2),
        state: fc.constantFrom('done', 'failed', 'dead') as fc.Arbitrary<
          'done' | 'failed' | 'dead'
        >,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('requeue' as const),
        s: fc.nat(2),
        due: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('retry' as const), n: fc.nat(40) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('wakes' as const) }) },
  );

  let opened: { store: SqliteRuntimeStore; writer: DatabaseSync; cleanup: () => void } | undefined;
  /** One store for every run of the property (schema and triggers set up once). */
  function shared(): { store: SqliteRuntimeStore; writer: DatabaseSync } {
    if (opened) return opened;
    const { dir, cleanup } = tempDir('hookgate-fair-prop-');
    const store = SqliteRuntimeStore.open(dir);
    opened = { store, writer: new DatabaseSync(path.join(dir, 'hookgate.db')), cleanup };
    return opened;
  }
  afterAll(async () => {
    opened?.writer.close();
    await opened?.store.close();
    opened?.cleanup();
  });

  type Step = typeof step extends fc.Arbitrary<infer T> ? T : never;

  /**
   * A session's turn ended (a run ended, waits for a retry, or an ended one was retried): it
   * takes its place after every row stored so far (row positions stand for seqs), while it has
   * work left.
   */
  function endTurn(rows: readonly Model[], places: Map<string | null, number>, row: Model) {
    const open = rows.some(
      (r) => r.session === row.session && (r.state === 'queued' || r.state === 'running'),
    );
    if (open) places.set(row.session, rows.length);
    else places.delete(row.session);
  }

  /** Apply one step to the store and to the model rows. */
  async function apply(
    store: SqliteRuntimeStore,
    writer: DatabaseSync,
    rows: Model[],
    places: Map<string | null, number>,
    i: number,
    action: Step,
  ) {
    const insert = writer.prepare(
      'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const running = (s: number) =>
      rows.find((row) => row.session === SESSIONS[s] && row.state === 'running');
    if (action.op === 'insert') {
      const session = SESSIONS[action.s] ?? null;
      const json = session ? '{}' : '{"kind":"wake","text":"event","mode":"next-heartbeat"}';
      insert.run(`r${i}`, session ? 'agent' : 'wake', 'h', session, 'now', json);
      rows.push({ id: `r${i}`, session, state: 'queued', nextAt: 0 });
    } else if (action.op === 'claim') {
      const head = store.dueHeads(NOW, 10).find((h) => h.sessionKey === SESSIONS[action.s]);
      const row = rows.find((r) => r.id === head?.id);
      const claim = head && row ? store.claim(head.id) : undefined;
      if (row && claim) Object.assign(row, { state: 'running', claim });
    } else if (action.op === 'finish') {
      const row = running(action.s);
      if (row) {
        expect(await store.finish(claimed(row.claim), action.state, { status: 'ok' })).toBe(true);
        row.state = action.state;
        endTurn(rows, places, row);
      }
    } else if (action.op === 'requeue') {
      const row = running(action.s);
      const nextAt = action.due ? NOW - 1 : NOW + 1000;
      if (row) {
        expect(await store.requeue(claimed(row.claim), 0, { status: 'retrying' })).toBe(true);
        // The test's clock: the time the action may run again, set as the requeue would have.
        writer
          .prepare('UPDATE actions SET next_attempt_at_ms = ? WHERE id = ?')
          .run(nextAt, row.id);
        Object.assign(row, { state: 'queued', nextAt });
        endTurn(rows, places, row);
      }
    } else if (action.op === 'retry') {
      const row = rows[action.n % Math.max(1, rows.length)];
      if (row && (await store.retryDead(row.id))) {
        Object.assign(row, { state: 'queued', nextAt: 0 });
        endTurn(rows, places, row);
      }
    } else {
      const ids = store.pendingWakes(100);
      await store.applyWakes('main', 100);
      for (const row of rows) if (ids.includes(row.id)) row.state = 'done';
    }
  }

  /** What the worker may start, computed from the rows and the sessions' places alone. */
  function expected(rows: readonly Model[], places: ReadonlyMap<string | null, number>) {
    const heads = new Map<string | null, { row: Model; at: number }>();
    for (const [at, row] of rows.entries()) {
      if ((row.state === 'queued' || row.state === 'running') && !heads.has(row.session)) {
        heads.set(row.session, { row, at });
      }
    }
    const place = (head: { row: Model; at: number }) =>
      Math.max(head.at, places.get(head.row.session) ?? -1);
    const due = [...heads.values()]
      .filter(({ row }) => row.session !== null && row.state === 'queued' && row.nextAt <= NOW)
      .sort((a, b) => place(a) - place(b) || a.at - b.at);
    return {
      heads: due.map(({ row }) => row.id),
      wakes: rows.filter((r) => r.session === null && r.state === 'queued').map((r) => r.id),
    };
  }

  test.prop([fc.array(step, { minLength: 5, maxLength: 40, size: 'max' })], { numRuns: 300 })(
    'the due heads are the oldest unfinished action of each session, in turn order, whatever the order of inserts, runs, backoffs, ends and retries',
    async (steps) => {
      const { store, writer } = shared();
      // A fresh queue for every run; the store (schema, triggers) is opened once.
      writer.exec('DELETE FROM actions; DELETE FROM session_heads; DELETE FROM system_events;');
      const rows: Model[] = [];
      const places = new Map<string | null, number>();
      for (const [i, action] of steps.entries()) {
        await apply(store, writer, rows, places, i, action);
        const want = expected(rows, places);
        expect(store.dueHeads(NOW, 10).map((head) => head.id)).toEqual(want.heads);
        expect(store.pendingWakes(100)).toEqual(want.wakes);
      }
    },
  );
});

describe('a worker pass that meets a row it cannot read', () => {
  /** Store an action row whose JSON no hook could have written (another process, a damaged file). */
  function insertUnreadable(
    dataDir: string,
    id: string,
    sessionKey: string | null,
    action = '{not json',
  ): void {
    const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { timeout: 10_000 });
    try {
      db.prepare(
        'INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, ?, ?, ?, ?, ?)',
      ).run(id, sessionKey ? 'agent' : 'wake', 'x', sessionKey, new Date().toISOString(), action);
    } finally {
      db.close();
    }
  }

  it('stored JSON that is not an action (null, a list, an agent run without its session) ends dead; nothing is left running', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url }, 2);
    await env.server.runtime?.worker.idle();
    insertUnreadable(env.dataDir, 'null-action', 'hook:a', 'null');
    insertUnreadable(env.dataDir, 'list-action', 'hook:b', '[1, 2]');
    insertUnreadable(env.dataDir, 'no-session', 'hook:c', '{"kind":"agent","message":"hi"}');
    const later = await env.post('agent', { message: 'hello', sessionKey: 'hook:a', ...QUIET });
    const other = await env.post('agent', { message: 'hello', sessionKey: 'hook:d', ...QUIET });
    expect((await waitForFinal(env.dataDir, later, WAIT_MS)).state).toBe('done');
    expect((await waitForFinal(env.dataDir, other, WAIT_MS)).state).toBe('done');
    for (const id of ['null-action', 'list-action', 'no-session'])
      await waitFor(`${id} to end`, () => env.state(id) === 'dead', WAIT_MS);
  });

  it('a store full of unreadable heads is ended in bounded passes, and the run behind them still runs', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url }, 1);
    await env.server.runtime?.worker.idle();
    const db = new DatabaseSync(path.join(env.dataDir, 'hookgate.db'), { timeout: 10_000 });
    const insert = db.prepare(
      "INSERT INTO actions (id, kind, hook, session_key, received_at, action) VALUES (?, 'agent', 'x', ?, ?, '{not json')",
    );
    db.exec('BEGIN');
    for (let i = 0; i < 1_000; i++)
      insert.run(`bad-${i}`, `hook:bad-${i % 7}`, new Date().toISOString());
    db.exec('COMMIT');
    db.close();
    // The only look for work is this acceptance's: the passes after it continue by themselves.
    const run = await env.post('agent', { message: 'hello', sessionKey: 'hook:good', ...QUIET });
    expect((await waitForFinal(env.dataDir, run, WAIT_MS)).state).toBe('done');
    // The good run need not wait for them all (each bad session's turn ends with its head), but
    // the passes go on until every one has ended, with nothing else to make them look.
    const left = () =>
      query(
        env.dataDir,
        "SELECT count(*) AS n FROM actions WHERE id LIKE 'bad-%' AND state <> 'dead'",
      )[0]?.['n'];
    await waitFor('every unreadable row to end', () => left() === 0, WAIT_MS);
  });

  it('a run behind an unreadable head is claimed in the same pass, with one slot', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url }, 1);
    // The worker's looks at start are over before the row appears.
    await env.server.runtime?.worker.idle();
    insertUnreadable(env.dataDir, 'bad-first', 'hook:bad');
    // The only look for work is this acceptance's: the pass that ends the unreadable head must
    // read the heads again and claim this run.
    const run = await env.post('agent', { message: 'hello', sessionKey: 'hook:good', ...QUIET });
    expect((await waitForFinal(env.dataDir, run, WAIT_MS)).state).toBe('done');
    expect(env.state('bad-first')).toBe('dead');
  });

  it('an unreadable wake and an unreadable session head end dead; later wakes and sessions still run', async () => {
    const agent = await gateAgent();
    const env = await boot({ kind: 'http', url: agent.url });
    insertUnreadable(env.dataDir, 'bad-wake', null);
    insertUnreadable(env.dataDir, 'bad-head', 'hook:bad');
    // Written behind the server's back: rung as the command line does after its writes.
    ringDoorbell(env.dataDir);

    const wake = await env.post('wake', { text: 'after the bad wake', mode: 'next-heartbeat' });
    const run = await env.post('agent', { message: 'hello', sessionKey: 'hook:other', ...QUIET });
    expect((await waitForFinal(env.dataDir, wake, WAIT_MS)).state).toBe('done');
    expect((await waitForFinal(env.dataDir, run, WAIT_MS)).state).toBe('done');
    await waitFor('the unreadable rows to end', () => env.state('bad-head') === 'dead', WAIT_MS);
    // The wake queued behind the server's back is found once the doorbell rang.
    await waitFor('the unreadable wake to end', () => env.state('bad-wake') === 'dead', WAIT_MS);
    expect(env.state('bad-wake')).toBe('dead');
    // The server still answers.
    expect(
      (await env.server.post('wake', { text: 'still up', mode: 'next-heartbeat' })).status,
    ).toBe(200);
  });
});

/** The claim a test just made (it fails loudly when there was none). */
function claimed(claim: Claim | undefined): Claim {
  if (!claim) throw new Error('expected the action to be claimed');
  return claim;
}
