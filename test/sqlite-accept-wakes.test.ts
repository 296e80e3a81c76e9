/**
 * The embedded store with the runtime on applies a wake in the transaction
 * that accepts it: the wake is stored done with its event in the main
 * session, or not at all, so a 200 means the event is there too (even if
 * the process dies right after). With the runtime off, wakes stay queued.
 * Also: a store file from before the leaner actions table migrates with its
 * rows, their order and their session heads.
 */
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { openStoreViews } from '../engine/store/backend.ts';
import { openSqliteStore, STORE_FILE } from '../engine/store/sqlite/action-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { BACK_TO_VERSION_12 } from './helpers/schema-version-12.ts';
import { SQLITE_SCHEMA_VERSION } from '../engine/store/sqlite/schema.ts';
import { startTestServer, TOKEN, tempDir } from './helpers/hookgate.ts';
import { waitFor } from './helpers/runtime.ts';
import { runOf, storeOf } from './helpers/store-reads.ts';
import { agentAction, wakeAction } from './runtime-store-contract.ts';
import path from 'node:path';

const MAIN = 'agent:main:main';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function openStores() {
  const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
  const accepting = await openSqliteStore(dir);
  const runtime = SqliteRuntimeStore.open(dir);
  cleanups.push(
    cleanup,
    () => accepting.close(),
    () => runtime.close(),
  );
  return { dir, accepting, runtime };
}

describe('wakes applied as they are accepted (runtime on)', () => {
  it('stores the wake done, one attempt, with its wrapped text as a wake event in the main session', async () => {
    const { accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const wake = wakeAction('deploy finished', { prompt: '<<wrapped>> deploy finished' });
    expect(await accepting.appendOrGet({ actions: [wake] })).toEqual({ stored: true });

    const run = await runtime.run(wake.id);
    expect(run).toMatchObject({ state: 'done', attempts: 1, outcome: { status: 'ok' } });
    expect(run?.startedAt).toEqual(expect.any(String));
    expect(run?.finishedAt).toEqual(expect.any(String));
    const events = await runtime.pendingEvents(MAIN, 10);
    expect(events).toEqual([
      expect.objectContaining({
        sessionKey: MAIN,
        text: '<<wrapped>> deploy finished',
        source: 'wake',
        actionId: wake.id,
        trusted: false,
      }),
    ]);
    // Nothing is left for the worker.
    expect(await runtime.hasRunnable()).toBe(false);
    expect(await runtime.applyWakes(MAIN, 10)).toEqual({ applied: 0, modes: [] });
  });

  it('keeps a trusted wake trusted and its plain text', async () => {
    const { accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const wake = wakeAction('from the owner');
    await accepting.appendOrGet({ actions: [wake] });
    expect(await runtime.pendingEvents(MAIN, 10)).toEqual([
      expect.objectContaining({ text: 'from the owner', trusted: true, actionId: wake.id }),
    ]);
  });

  it('leaves agent actions queued for the worker', async () => {
    const { accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const agent = agentAction('hook:one');
    await accepting.appendOrGet({ actions: [agent] });
    expect((await runtime.run(agent.id))?.state).toBe('queued');
    expect(await runtime.pendingEvents(MAIN, 10)).toEqual([]);
  });

  it('a request whose key was already stored adds neither its wake nor its event', async () => {
    const { accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const record = (id: string) => ({
      key: 'delivery:1',
      fingerprint: '',
      actionId: id,
      response: '{"ok":true}',
      createdAtMs: Date.now(),
      notBeforeMs: Date.now() - 60_000,
    });
    const first = wakeAction('first');
    const again = wakeAction('again');
    await accepting.appendOrGet({ actions: [first], idempotency: [record(first.id)] });
    const outcome = await accepting.appendOrGet({
      actions: [again],
      idempotency: [record(again.id)],
    });
    expect(outcome.stored).toBe(false);
    expect(await runtime.run(again.id)).toBeUndefined();
    expect((await runtime.pendingEvents(MAIN, 10)).map((event) => event.text)).toEqual(['first']);
  });

  it('a wake whose event cannot be stored is refused without its action; the others of its group stand', async () => {
    const { dir, accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const refuser = new DatabaseSync(path.join(dir, STORE_FILE));
    refuser.exec(`CREATE TRIGGER refuse_event BEFORE INSERT ON system_events
      WHEN NEW.text = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    refuser.close();
    const [before, refused, after] = ['before', 'refused', 'after'].map((text) => wakeAction(text));
    // One event-loop turn: one group, one transaction.
    const outcomes = await Promise.allSettled(
      [before, refused, after].map((wake) => accepting.appendOrGet({ actions: [wake!] })),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect(await runtime.run(refused!.id)).toBeUndefined();
    expect((await runtime.run(before!.id))?.state).toBe('done');
    expect((await runtime.run(after!.id))?.state).toBe('done');
    expect((await runtime.pendingEvents(MAIN, 10)).map((event) => event.text)).toEqual([
      'before',
      'after',
    ]);
  });

  it('a wake that can be neither stored whole nor taken back refuses its whole group, keeping none of it', async () => {
    const { dir, accepting, runtime } = await openStores();
    accepting.applyWakesOnAccept(MAIN);
    const refuser = new DatabaseSync(path.join(dir, STORE_FILE));
    refuser.exec(`CREATE TRIGGER refuse_event BEFORE INSERT ON system_events
      WHEN NEW.text = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
      CREATE TRIGGER refuse_undo BEFORE DELETE ON actions
      BEGIN SELECT RAISE(ABORT, 'no undo either'); END`);
    refuser.close();
    const wakes = ['before', 'refused', 'after'].map((text) => wakeAction(text));
    const outcomes = await Promise.allSettled(
      wakes.map((wake) => accepting.appendOrGet({ actions: [wake] })),
    );
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    // Both causes named: the refused event and the undo that failed.
    const reason = (outcomes[0] as PromiseRejectedResult).reason as Error;
    expect(reason.message).toContain('refused by the test');
    expect(reason.message).toContain('no undo either');
    for (const wake of wakes) expect(await runtime.run(wake.id)).toBeUndefined();
    expect(await runtime.pendingEvents(MAIN, 10)).toEqual([]);
    // The writer goes on: the next group is stored.
    const next = wakeAction('next');
    expect(await accepting.appendOrGet({ actions: [next] })).toEqual({ stored: true });
    expect((await runtime.run(next.id))?.state).toBe('done');
  });

  it('with the runtime off (never asked, or asked to stop), wakes stay queued', async () => {
    const { accepting, runtime } = await openStores();
    const queued = wakeAction('queued');
    await accepting.appendOrGet({ actions: [queued] });
    accepting.applyWakesOnAccept(MAIN);
    accepting.applyWakesOnAccept(null);
    const later = wakeAction('later');
    await accepting.appendOrGet({ actions: [later] });
    expect((await runtime.run(queued.id))?.state).toBe('queued');
    expect((await runtime.run(later.id))?.state).toBe('queued');
    expect(await runtime.pendingEvents(MAIN, 10)).toEqual([]);
    // The worker applies them when it runs.
    expect((await runtime.applyWakes(MAIN, 10)).applied).toBe(2);
  });
});

describe('a store file from before the leaner actions table', () => {
  it('keeps its rows, their order and session heads, and takes new actions after them', async () => {
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    const accepting = await openSqliteStore(dir);
    const older = [agentAction('hook:a', 'one'), agentAction('hook:a', 'two'), wakeAction('w')];
    await accepting.appendOrGet({ actions: older });
    await accepting.close();
    // Put the tables back in their earlier shape (AUTOINCREMENT, an index of every row by state,
    // session heads without their place in turn order).
    const db = new DatabaseSync(path.join(dir, STORE_FILE));
    db.exec(BACK_TO_VERSION_12);
    db.exec(`
      CREATE TABLE old_actions (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,
        hook TEXT NOT NULL, session_key TEXT, state TEXT NOT NULL DEFAULT 'queued',
        attempts INTEGER NOT NULL DEFAULT 0, received_at TEXT NOT NULL, action TEXT NOT NULL,
        next_attempt_at_ms INTEGER NOT NULL DEFAULT 0, started_at TEXT, finished_at TEXT,
        outcome TEXT, runner_pgid INTEGER);
      INSERT INTO old_actions SELECT * FROM actions;
      DROP TABLE actions;
      ALTER TABLE old_actions RENAME TO actions;
      CREATE INDEX actions_state ON actions (state, seq);
      DROP TABLE event_consumption;
      PRAGMA user_version = 7;
    `);
    db.close();

    const reopened = await openSqliteStore(dir);
    const store = SqliteRuntimeStore.open(dir);
    cleanups.push(
      () => reopened.close(),
      () => store.close(),
    );
    const check = new DatabaseSync(path.join(dir, STORE_FILE), { readOnly: true });
    cleanups.push(() => check.close());
    expect(check.prepare('PRAGMA user_version').get()).toEqual({
      user_version: SQLITE_SCHEMA_VERSION,
    });
    const indexes = check
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions'")
      .all()
      .map((row) => row['name']);
    expect(indexes).toEqual(expect.arrayContaining(['actions_open', 'actions_session_pending']));
    expect(indexes).not.toContain('actions_state');

    const newer = agentAction('hook:a', 'three');
    await reopened.appendOrGet({ actions: [newer] });
    const runs = await store.runs(10);
    // Newest first: the new action after every old one, the old ones in their order.
    expect(runs.map((run) => run.id)).toEqual([...older, newer].map((a) => a.id).reverse());
    expect(runs.map((run) => run.seq)).toEqual([4, 3, 2, 1]);
    // The session's head is still its oldest action; the next ones wait behind it.
    const claimed = await store.claimHeads(5, new Set());
    expect(claimed.map((run) => run.id)).toEqual([older[0]?.id]);
    expect(await store.countByState()).toEqual({
      queued: 3,
      running: 1,
      done: 0,
      failed: 0,
      dead: 0,
    });
  });
});

describe('hookgate serve with the runtime on', () => {
  it('applies wakes queued while the runtime was off before any new one, so events keep acceptance order', async () => {
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    // Queued while the runtime was off (as a server started without it leaves them): more than
    // the worker applies in many passes, so its passes alone could not finish them first.
    const queued = 20_000;
    const accepting = await openSqliteStore(dir);
    for (let at = 0; at < queued; at += 1_000) {
      const actions = Array.from({ length: 1_000 }, (_, i) =>
        wakeAction(`queued ${at + i}`, { mode: 'next-heartbeat' }),
      );
      await accepting.appendOrGet({ actions });
    }
    await accepting.close();

    const on = await startTestServer({}, { dataDir: dir, runtime: true });
    cleanups.push(() => on.stop());
    const answer = await on.post('wake', { text: 'after the start', mode: 'next-heartbeat' });
    expect(answer.status).toBe(200);
    const { id } = (await answer.json()) as { id: string };
    // Stored done with its event before the 200: no worker pass needed.
    expect(await runOf(on, id)).toMatchObject({ state: 'done', attempts: 1 });
    // Newest first: the new wake's event after every queued one.
    const events = await storeOf(on).events('main', queued + 10);
    expect(events).toHaveLength(queued + 1);
    expect(events[0]?.actionId).toBe(id);
  });
});

describe('a wake sent back by retry while wakes are applied at acceptance', () => {
  it('is applied by the worker at its poll: done, with its event', async () => {
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    const on = await startTestServer({}, { dataDir: dir, runtime: true });
    cleanups.push(() => on.stop());
    const answer = await on.post('wake', { text: 'again please', mode: 'next-heartbeat' });
    const { id } = (await answer.json()) as { id: string };
    // As if it had died: its event gone, the action dead; then the operator retries it.
    const db = new DatabaseSync(path.join(dir, STORE_FILE), { timeout: 10_000 });
    db.prepare('DELETE FROM system_events WHERE action_id = ?').run(id);
    db.prepare("UPDATE actions SET state = 'dead' WHERE id = ?").run(id);
    db.close();
    expect(await storeOf(on).retryDead(id)).toBe(true);
    const run = await waitFor(
      'the retried wake applied',
      async () => {
        const row = await runOf(on, id);
        return row?.state === 'done' ? row : undefined;
      },
      10_000,
    );
    expect(run.state).toBe('done');
    const events = await storeOf(on).events('main', 10);
    expect(events.map((event) => event.actionId)).toEqual([id]);
  });
});

describe('a now-wake accepted while the server shuts down', () => {
  it('stays queued, and the next start applies it and runs its heartbeat', async () => {
    const runs: string[] = [];
    const agent = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      req.on('end', () => {
        runs.push((JSON.parse(body) as { kind: string }).kind);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ reply: 'HEARTBEAT_OK' }));
      });
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => agent.close(() => resolve())));
    const url = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/run`;
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    const settings = {
      agents: { list: [{ id: 'main', default: true, runner: { kind: 'http', url } }] },
      runtime: { heartbeat: { every: 'off' } },
    };
    const first = await startTestServer(settings, { dataDir: dir, runtime: true });
    // The body completes only after the shutdown began: the server still drains it.
    const body = JSON.stringify({ text: 'during shutdown', mode: 'now' });
    const { hostname, port } = new URL(first.url);
    const seen = new Promise((resolve) => first.server.once('request', resolve));
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk;
    });
    socket.write(
      `POST /hooks/wake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await seen;
    const closing = first.stop();
    // Shutting down (no new connections), with this request still being read.
    await waitFor('the listener to close', () => !first.server.listening);
    socket.write(body.slice(5));
    await waitFor('the answer', () => answer.includes('\r\n\r\n') && answer);
    await closing;
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    const heartbeatsBefore = runs.filter((kind) => kind === 'heartbeat').length;

    const second = await startTestServer(settings, { dataDir: dir, runtime: true });
    cleanups.push(() => second.stop());
    await waitFor(
      'the heartbeat the wake asked for',
      () => runs.filter((kind) => kind === 'heartbeat').length > heartbeatsBefore,
      10_000,
    );
    const events = await storeOf(second).events('main', 10);
    expect(events.map((event) => event.text)).toEqual([expect.stringContaining('during shutdown')]);
  });
});

describe("the worker's idle look for operator requests", () => {
  it('does not wait for a write lock another connection holds (nothing to take is a plain read)', async () => {
    const { dir, runtime } = await openStores();
    const holder = new DatabaseSync(path.join(dir, STORE_FILE));
    holder.exec('BEGIN IMMEDIATE');
    try {
      expect(await runtime.takeRequests()).toEqual([]);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    // With a request waiting, it is taken (the write lock is free again).
    await runtime.request('heartbeat');
    expect((await runtime.takeRequests()).map((request) => request.kind)).toEqual(['heartbeat']);
  });
});

describe('a store file from a newer hookgate', () => {
  it('is refused at open, not written to, and left as it is', async () => {
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    await (await openSqliteStore(dir)).close();
    const file = path.join(dir, STORE_FILE);
    const db = new DatabaseSync(file);
    const newer = SQLITE_SCHEMA_VERSION + 1;
    db.exec(`PRAGMA user_version = ${newer}`);
    db.close();
    await expect(openSqliteStore(dir)).rejects.toThrow(
      `schema version ${newer}; this hookgate reads version ${SQLITE_SCHEMA_VERSION} (use the hookgate that serves it)`,
    );
    expect(() => SqliteRuntimeStore.open(dir)).toThrow(`schema version ${newer}`);
    const check = new DatabaseSync(file, { readOnly: true });
    expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: newer });
    check.close();
  });
});

describe('the command-line views', () => {
  it('refuse a store at another schema version and leave it as it is', async () => {
    const { dir, cleanup } = tempDir('hookgate-accept-wakes-');
    cleanups.push(cleanup);
    const accepting = await openSqliteStore(dir);
    await accepting.close();
    const file = path.join(dir, STORE_FILE);
    const db = new DatabaseSync(file);
    db.exec('PRAGMA user_version = 7');
    db.close();
    await expect(openStoreViews(dir, { kind: 'sqlite' } as never)).rejects.toThrow(
      `schema version 7; this hookgate reads version ${SQLITE_SCHEMA_VERSION} (start this hookgate once to migrate it)`,
    );
    const check = new DatabaseSync(file, { readOnly: true });
    expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: 7 });
    check.close();
  });
});
