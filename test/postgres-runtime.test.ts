/**
 * The PostgreSQL runtime store as several instances use it: two stores over
 * two pools on one database stand for two instances. Claims take one head
 * per session across both, a stale claim writes nothing, an expired lease
 * lets the other instance take the run over, one instance leads, wakes are
 * applied once and in order, a long backlog in one session does not hold
 * back another, and retention deletes only finished actions.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { END_TURN, TURN_LOCK } from '../engine/store/postgres/claim-queries.ts';
import { type Backend, openBackend } from '../engine/store/backend.ts';
import type { RunRow, RuntimeStore } from '../engine/runtime/runtime-store.ts';
import type { Action } from '../schemas/action.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';
import { agentAction, wakeAction } from './runtime-store-contract.ts';

const skip = skipPostgres();

const messageOf = (run: RunRow) => (run.action.kind === 'agent' ? run.action.message : run.id);

describe.skipIf(skip)('the PostgreSQL runtime store shared by instances', () => {
  let server: PostgresServer;
  const opened: Array<Backend | RuntimeStore> = [];

  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });
  afterAll(async () => server?.stop());

  // The database of the last instances() call, for a test's own connection.
  let databaseUrl = '';

  /** Two instances on a fresh database, leases of `leaseSeconds`. */
  async function instances(leaseSeconds = 30) {
    const url = await server.createDatabase();
    databaseUrl = url;
    const store = { kind: 'postgres' as const, url, poolSize: 4, leaseSeconds, retentionDays: 30 };
    const open = async () => {
      const backend = await openBackend({ dataDir: '/nonexistent', store, commitDelayMs: 0 });
      const runtime = backend.openRuntime();
      opened.push(backend, runtime);
      return {
        accept: (action: Action) => backend.actions.appendOrGet({ actions: [action] }),
        runtime,
      };
    };
    return [await open(), await open()] as const;
  }

  it('claims one head per session across instances, and a stale claim changes nothing', async () => {
    const [a, b] = await instances();
    for (const action of [
      agentAction('s:a', 'a1'),
      agentAction('s:a', 'a2'),
      agentAction('s:b', 'b1'),
    ])
      await a.accept(action);
    const first = await a.runtime.claimHeads(4, new Set());
    expect(first.map(messageOf)).toEqual(['a1', 'b1']);
    // The other instance finds nothing: both heads run, and a2 waits behind a1.
    expect(await b.runtime.claimHeads(4, new Set())).toEqual([]);
    const [a1] = first;
    if (!a1) throw new Error('no claim');
    expect(await b.runtime.finish(a1, 'done', { status: 'ok' })).toBe(false);
    expect(await a.runtime.finish({ ...a1, attempts: 2 }, 'done', { status: 'ok' })).toBe(false);
    expect(await a.runtime.finish(a1, 'done', { status: 'ok' })).toBe(true);
    expect((await b.runtime.claimHeads(4, new Set())).map(messageOf)).toEqual(['a2']);
  });

  it('a run whose instance stopped renewing is taken over after its lease, and the old claim is fenced out', async () => {
    const [a, b] = await instances(2);
    await a.accept(agentAction('s:lease', 'leased'));
    const [claim] = await a.runtime.claimHeads(1, new Set());
    if (!claim) throw new Error('no claim');
    const [taken] = await waitFor(
      'the lease to expire and the run to be taken over',
      async () => {
        const got = await b.runtime.claimHeads(1, new Set());
        return got.length > 0 ? got : undefined;
      },
      30_000,
      200,
    );
    expect(taken?.id).toBe(claim.id);
    expect(taken?.attempts).toBe(2);
    expect(await a.runtime.saveOutcome(claim, { status: 'retrying' })).toBe(false);
    expect(await a.runtime.finish(claim, 'done', { status: 'ok' })).toBe(false);
    if (!taken) throw new Error('no takeover');
    expect(await b.runtime.finish(taken, 'done', { status: 'ok' })).toBe(true);
  });

  it('renewing keeps a run leased past its lease time', async () => {
    const [a, b] = await instances(2);
    await a.accept(agentAction('s:renew', 'kept'));
    const [claim] = await a.runtime.claimHeads(1, new Set());
    if (!claim) throw new Error('no claim');
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      await a.runtime.renewLeases([claim]);
      expect(await b.runtime.claimHeads(1, new Set())).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(await a.runtime.finish(claim, 'done', { status: 'ok' })).toBe(true);
  });

  it('one instance leads at a time; resigning hands the lead over', async () => {
    const [a, b] = await instances();
    expect(await a.runtime.leadership.lead()).toBe(true);
    expect(await b.runtime.leadership.lead()).toBe(false);
    expect(await a.runtime.leadership.lead()).toBe(true);
    await a.runtime.leadership.resign();
    expect(await b.runtime.leadership.lead()).toBe(true);
    expect(await a.runtime.leadership.lead()).toBe(false);
  });

  it('wakes are applied once, in order, whichever instances apply them; a NUL in the text is kept visible', async () => {
    const [a, b] = await instances();
    for (let i = 0; i < 30; i++) await a.accept(wakeAction(`wake ${i}${i === 7 ? '\u0000' : ''}`));
    const results = await Promise.all([
      a.runtime.applyWakes('main', 10),
      b.runtime.applyWakes('main', 10),
      a.runtime.applyWakes('main', 10),
      b.runtime.applyWakes('main', 10),
    ]);
    let applied = results.reduce((sum, r) => sum + r.applied, 0);
    while (applied < 30) applied += (await b.runtime.applyWakes('main', 10)).applied;
    expect(applied).toBe(30);
    const texts = (await a.runtime.events('main', 100)).reverse().map((event) => event.text);
    expect(texts).toHaveLength(30);
    expect(texts.map((text) => text.replace('\uFFFD', ''))).toEqual(
      Array.from({ length: 30 }, (_, i) => expect.stringContaining(`wake ${i}`) as unknown),
    );
    expect(texts[7]).toContain('\uFFFD');
  });

  it("a backlog longer than the claim's window does not hold back another session", async () => {
    const [a] = await instances();
    await Promise.all(
      Array.from({ length: 700 }, (_, i) => a.accept(agentAction('s:bulk', `m${i}`))),
    );
    await a.accept(agentAction('s:late', 'late'));
    // Sent side by side, the 700 are stored over more than one statement in flight at once: the
    // session's head is whichever the store holds first, not necessarily m0.
    const bulk = (await a.runtime.runs(1_000)).filter(
      (run) => run.action.kind === 'agent' && run.action.sessionKey === 's:bulk',
    );
    expect(bulk).toHaveLength(700);
    const oldest = bulk.reduce((first, run) => (run.seq < first.seq ? run : first));
    const claimed = await a.runtime.claimHeads(4, new Set());
    expect(claimed.map(messageOf).sort()).toEqual(['late', messageOf(oldest)].sort());
  });

  it("with one slot, a backlog longer than the claim's window takes turns with a session beyond it", async () => {
    const [a] = await instances();
    for (let i = 0; i < 600; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, j) => a.accept(agentAction('s:bulk', `m${i + j}`))),
      );
    await a.accept(agentAction('s:late', 'late'));
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [run] = await a.runtime.claimHeads(1, new Set());
      if (!run) throw new Error('nothing claimed');
      order.push(run.action.kind === 'agent' ? run.action.sessionKey : 'wake');
      expect(await a.runtime.finish(run, 'done', { status: 'ok' })).toBe(true);
    }
    // The late session waited while the backlog's first run ran: it goes next, then the backlog.
    expect(order).toEqual(['s:bulk', 's:late', 's:bulk']);
  });

  it("a run's end waits for another writer ending a turn of its session: the session keeps the place that writer set", async () => {
    const [a] = await instances();
    const a1 = agentAction('s:x', 'a1');
    const a2 = agentAction('s:x', 'a2');
    await a.accept(a1);
    await a.accept(a2);
    const [first] = await a.runtime.claimHeads(1, new Set());
    expect(first?.id).toBe(a1.id);
    await a.runtime.finish(first as RunRow, 'dead', { status: 'error', reason: 'gave up' });
    const [second] = await a.runtime.claimHeads(1, new Set());
    expect(second?.id).toBe(a2.id);
    const b1 = agentAction('s:y', 'b1');
    await a.accept(b1);
    // Another writer (an operator's retry of a1) ends s:x's turn in a transaction held open.
    const writer = new pg.Client({ connectionString: databaseUrl });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(TURN_LOCK, [a1.id]);
      await writer.query("UPDATE actions SET state = 'queued', attempts = 0 WHERE id = $1", [
        a1.id,
      ]);
      await writer.query(END_TURN, [a1.id]);
      // a2's end now: it must wait for that writer, not read s:x's work without its retry.
      const ended = a.runtime.finish(second as RunRow, 'done', { status: 'ok' });
      await waitFor('the end to wait for the writer', async () => {
        const { rows } = await writer.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
        );
        return (rows[0]?.n ?? 0) >= 1;
      });
      await writer.query('COMMIT');
      expect(await ended).toBe(true);
    } finally {
      await writer.end();
    }
    // s:x's turn ended after b1 was accepted: b1 first, then the retried a1.
    const order: string[] = [];
    for (let i = 0; i < 2; i++) {
      const [run] = await a.runtime.claimHeads(1, new Set());
      if (!run) throw new Error('nothing claimed');
      order.push(messageOf(run));
      await a.runtime.finish(run, 'done', { status: 'ok' });
    }
    expect(order).toEqual(['b1', 'a1']);
  });

  it('retention deletes finished actions only', async () => {
    const [a] = await instances();
    await a.accept(agentAction('s:r', 'finished'));
    await a.accept(agentAction('s:q', 'queued'));
    await a.accept(agentAction('s:q', 'queued too'));
    const [done] = await a.runtime.claimHeads(1, new Set());
    if (!done) throw new Error('no claim');
    await a.runtime.finish(done, 'done', { status: 'ok' });
    expect(await a.runtime.pruneFinished(60_000)).toBe(0);
    expect(await a.runtime.pruneFinished(0)).toBe(1);
    expect((await a.runtime.runs(10)).map(messageOf).sort()).toEqual(['queued', 'queued too']);
  });
});
