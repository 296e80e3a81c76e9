/**
 * An instance that stalls (or loses the database) for longer than a run's
 * lease may find, when it goes on, that another instance took the run over:
 * it must not start the turn beside theirs. Two workers on one PostgreSQL
 * database; the first claims a run, then waits on its history read with its
 * renewals failing while the lease runs out; the second takes the run over
 * and starts its turn; then the first goes on. And a turn already running when
 * its instance loses the database is stopped before its lease can lapse, so
 * the instance that takes the run over does not run it beside it.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import type { Claim, TurnOwner } from '../engine/runtime/runtime-store.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { PostgresRuntimeStore } from '../engine/store/postgres/runtime-store.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { testWorker } from './helpers/worker.ts';

const skip = skipPostgres();
const LEASE_MS = 1_000;

type Deferred = { promise: Promise<void>; resolve: () => void };
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * A store whose history read (its first step: the turns' sizes) waits for the test, and whose
 * renewals fail until then.
 */
class StalledStore extends PostgresRuntimeStore {
  readonly historyAsked = deferred();
  readonly goOn = deferred();
  private cutOff = true;
  override async historySizes(owner: TurnOwner, limit: number): Promise<number[]> {
    this.historyAsked.resolve();
    await this.goOn.promise;
    this.cutOff = false;
    return super.historySizes(owner, limit);
  }
  override async renewLeases(running: readonly Claim[]): Promise<void> {
    if (this.cutOff) throw new Error('the database cannot be reached');
    return super.renewLeases(running);
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const AGENT_ACTION = JSON.stringify({
  kind: 'agent',
  id: 'run-1',
  hook: 'agent',
  sessionKey: 'hook:a',
  agentId: 'main',
  message: 'one turn',
  name: 'Lease',
  wakeMode: 'next-heartbeat',
  deliver: false,
  untrusted: false,
});

/** A fresh schema holding one queued agent run, `run-1` of session `hook:a`. */
async function queueOneRun(pool: pg.Pool): Promise<void> {
  await migratePostgres(pool);
  await pool.query(
    `INSERT INTO actions (id, kind, hook, session_key, received_at, action)
     VALUES ('run-1', 'agent', 'agent', 'hook:a', now(), $1)`,
    [AGENT_ACTION],
  );
}

/** The queued run's row as the database has it now. */
async function runRow(
  pool: pg.Pool,
): Promise<{ state: string; attempts: number; reply: unknown } | undefined> {
  const { rows } = await pool.query<{ state: string; attempts: number; outcome: string | null }>(
    "SELECT state, attempts, outcome FROM actions WHERE id = 'run-1'",
  );
  const row = rows[0];
  return row && { ...row, reply: JSON.parse(row.outcome ?? '{}').reply };
}

/** Wait for the queued run to end done, and return its row. */
async function doneRun(pool: pg.Pool): Promise<{ attempts: number; reply: unknown }> {
  await until('the run to end', async () => (await runRow(pool))?.state === 'done');
  const row = await runRow(pool);
  if (!row) throw new Error('the run is gone');
  return row;
}

/** A database too slow for the lease at every start: each start's check finds it lapsing. */
class SlowAtEveryStart extends PostgresRuntimeStore {
  startsRefused = 0;
  override holdsLease(claim: Claim, reserve?: number): boolean {
    // The start's check asks for the largest reserve; the watch of a running turn less.
    if (reserve !== undefined && reserve > 0.3) {
      this.startsRefused++;
      return false;
    }
    return super.holdsLease(claim, reserve);
  }
}

/** Wait until the run is queued with an attempt counted (each claim also shows one, running). */
async function attemptCounted(pool: pg.Pool): Promise<void> {
  await until('an attempt to be counted', async () => {
    const row = await runRow(pool);
    return row?.state === 'queued' && row.attempts === 1;
  });
}

/** A runner that notes each turn it starts under `name`, then answers once `hold` settles. */
function notingRunner(
  started: string[],
  name: string,
  hold: Promise<void> = Promise.resolve(),
): Runner {
  return {
    async run() {
      started.push(name);
      await hold;
      return { status: 'ok', reply: `${name} answered` };
    },
  };
}

/** One run at a time, the store looked at every 50 ms. */
const WORKER_OPTIONS = { workspace: '/tmp', concurrency: 1, pollMs: 50 };

/**
 * One instance on a fresh database with one run queued: `body` starts its worker (`run`) when
 * the row is as it wants; the worker and the pool are closed after.
 */
async function oneInstance<S extends PostgresRuntimeStore>(
  server: PostgresServer,
  makeStore: (pool: pg.Pool) => S,
  body: (ctx: {
    pool: pg.Pool;
    store: S;
    started: string[];
    run: () => Promise<void>;
  }) => Promise<void>,
): Promise<void> {
  const url = await server.createDatabase();
  const pool = openPool({ url, poolSize: 3 });
  const started: string[] = [];
  const store = makeStore(pool);
  const worker = testWorker(store, notingRunner(started, 'a'), WORKER_OPTIONS);
  try {
    await queueOneRun(pool);
    await body({
      pool,
      store,
      started,
      run: async () => {
        await worker.start();
        worker.kick();
      },
    });
  } finally {
    await worker.stop();
    await closePool(pool);
  }
}

const INSTANCE_A = { owner: 'instance-a', leaseMs: LEASE_MS };

describe.skipIf(skip)('a run whose lease lapsed while its instance stalled', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('is not started by the stalled instance once another instance took it over', async () => {
    const url = await server.createDatabase();
    const poolA = openPool({ url, poolSize: 3 });
    const poolB = openPool({ url, poolSize: 3 });
    const started: string[] = [];
    const releaseB = deferred();
    const storeA = new StalledStore(poolA, { owner: 'instance-a', leaseMs: LEASE_MS });
    const storeB = new PostgresRuntimeStore(poolB, { owner: 'instance-b', leaseMs: LEASE_MS });
    const a = testWorker(storeA, notingRunner(started, 'a'), WORKER_OPTIONS);
    const b = testWorker(storeB, notingRunner(started, 'b', releaseB.promise), WORKER_OPTIONS);
    try {
      await queueOneRun(poolA);
      await a.start();
      a.kick();
      await storeA.historyAsked.promise;
      // The first instance holds the run and cannot renew it; the second takes it once it lapses.
      await b.start();
      await until('the second instance to start the turn', () => started.includes('b'));
      storeA.goOn.resolve();
      await a.idle();
      expect(started).toEqual(['b']);
      releaseB.resolve();
      await b.idle();
      const row = await runRow(poolA);
      expect(row?.state).toBe('done');
      expect(row?.reply).toBe('b answered');
      expect(started).toEqual(['b']);
    } finally {
      releaseB.resolve();
      await a.stop();
      await b.stop();
      await closePool(poolA);
      await closePool(poolB);
    }
  }, 120_000);

  it('goes back to the queue at once, its attempt given back, when nobody took it over', async () => {
    await oneInstance(
      server,
      (pool) => new StalledStore(pool, INSTANCE_A),
      async ({ pool, store, started, run }) => {
        await run();
        await store.historyAsked.promise;
        await until('the lease to run out', async () => {
          const { rows } = await pool.query<{ lapsed: boolean }>(
            "SELECT lease_until < now() AS lapsed FROM actions WHERE id = 'run-1'",
          );
          return rows[0]?.lapsed === true;
        });
        store.goOn.resolve();
        const row = await doneRun(pool);
        // Given up once, requeued with its attempt refunded, then claimed and run: one attempt.
        expect(row.attempts).toBe(1);
        expect(started).toEqual(['a']);
      },
    );
  }, 120_000);

  it('a turn running when its instance loses the database is stopped before another can take the run over', async () => {
    const url = await server.createDatabase();
    const poolA = openPool({ url, poolSize: 3 });
    const poolB = openPool({ url, poolSize: 3 });
    // The first instance's database goes away while its turn runs: nothing it sends arrives.
    let cut = false;
    const unreachable = () => Promise.reject(new Error('the database cannot be reached'));
    const query = poolA.query.bind(poolA);
    const connect = poolA.connect.bind(poolA);
    poolA.query = ((...args: Parameters<typeof query>) =>
      cut ? unreachable() : query(...args)) as typeof poolA.query;
    // pg's own query() connects with a callback: both forms are cut off.
    poolA.connect = ((...args: unknown[]) => {
      if (!cut) return (connect as (...a: unknown[]) => unknown)(...args);
      const callback = args[0] as ((err: Error) => void) | undefined;
      if (typeof callback !== 'function') return unreachable();
      queueMicrotask(() => callback(new Error('the database cannot be reached')));
      return undefined;
    }) as typeof poolA.connect;
    const events: string[] = [];
    const runnerA: Runner = {
      run(_request, hooks) {
        events.push('a started');
        cut = true;
        return new Promise((resolve) => {
          hooks?.signal?.addEventListener(
            'abort',
            () => {
              events.push('a stopped');
              resolve({ status: 'retry', reason: 'stopped' });
            },
            { once: true },
          );
        });
      },
    };
    const runnerB: Runner = {
      async run() {
        events.push('b started');
        return { status: 'ok', reply: 'b answered' };
      },
    };
    const storeA = new PostgresRuntimeStore(poolA, { owner: 'instance-a', leaseMs: LEASE_MS });
    const storeB = new PostgresRuntimeStore(poolB, { owner: 'instance-b', leaseMs: LEASE_MS });
    const a = testWorker(storeA, runnerA, WORKER_OPTIONS);
    const b = testWorker(storeB, runnerB, WORKER_OPTIONS);
    try {
      await queueOneRun(poolB);
      await a.start();
      a.kick();
      await until('the first instance to start the turn', () => events.includes('a started'));
      await b.start();
      await until('the second instance to start the turn', () => events.includes('b started'));
      // Stopped by its own clock, before the database let the other instance claim the run.
      expect(events).toEqual(['a started', 'a stopped', 'b started']);
      expect((await doneRun(poolB)).reply).toBe('b answered');
    } finally {
      cut = false;
      await a.stop();
      await b.stop();
      await closePool(poolA);
      await closePool(poolB);
    }
  }, 120_000);

  it('a healthy turn lasting several leases is never stopped by its own watch', async () => {
    const url = await server.createDatabase();
    const pool = openPool({ url, poolSize: 3 });
    const events: string[] = [];
    // The smallest lease the config allows, and the runtime's own poll: the tightest cadence.
    const store = new PostgresRuntimeStore(pool, { owner: 'instance-a', leaseMs: 2_000 });
    const worker = testWorker(
      store,
      {
        run(_request, hooks) {
          events.push('started');
          return new Promise((resolve) => {
            const done = setTimeout(() => resolve({ status: 'ok', reply: 'a answered' }), 6_000);
            hooks?.signal?.addEventListener(
              'abort',
              () => {
                clearTimeout(done);
                events.push('stopped');
                resolve({ status: 'retry', reason: 'stopped' });
              },
              { once: true },
            );
          });
        },
      },
      { workspace: '/tmp', concurrency: 1, pollMs: 500 },
    );
    try {
      await queueOneRun(pool);
      await worker.start();
      worker.kick();
      const row = await doneRun(pool);
      expect(events).toEqual(['started']);
      expect(row.attempts).toBe(1);
      expect(row.reply).toBe('a answered');
    } finally {
      await worker.stop();
      await closePool(pool);
    }
  }, 120_000);

  it('a claim holds its lease for less than the lease, and a renewal keeps only runs still its own', async () => {
    const url = await server.createDatabase();
    const pool = openPool({ url, poolSize: 3 });
    try {
      await queueOneRun(pool);
      const first = new PostgresRuntimeStore(pool, { owner: 'instance-a', leaseMs: 300 });
      const second = new PostgresRuntimeStore(pool, { owner: 'instance-b', leaseMs: 60_000 });
      const [claim] = await first.claimHeads(1, new Set());
      if (!claim) throw new Error('nothing claimed');
      expect(first.holdsLease(claim)).toBe(true);
      // A renewal that does not list the claim yet (the worker learns of a claim only when the
      // claim pass returns) keeps it held.
      await first.renewLeases([]);
      expect(first.holdsLease(claim)).toBe(true);
      // Another attempt of the run is another claim.
      expect(first.holdsLease({ id: claim.id, attempts: claim.attempts + 1 })).toBe(false);
      await until('the lease to lapse', () => !first.holdsLease(claim));
      await until('the second instance to take the run over', async () => {
        const [taken] = await second.claimHeads(1, new Set());
        return taken?.id === 'run-1';
      });
      // The first instance's renewal finds the run another's: it does not hold it again.
      await first.renewLeases([claim]);
      expect(first.holdsLease(claim)).toBe(false);
    } finally {
      await closePool(pool);
    }
  }, 120_000);
  it('gives back only a few attempts in a row when every start finds the lease lapsing', async () => {
    // A database too slow for the lease at each start: the turn is given up every time. The
    // first starts give the attempt back; the ones after count, with the usual backoff (ten
    // minutes in the test worker), so the run cannot go round the queue for ever.
    await oneInstance(
      server,
      (pool) => new SlowAtEveryStart(pool, INSTANCE_A),
      async ({ pool, store, started, run }) => {
        await run();
        await attemptCounted(pool);
        const { rows } = await pool.query<{ state: string; waits: boolean; outcome: string }>(
          "SELECT state, next_attempt_at > now() + interval '1 minute' AS waits, outcome FROM actions WHERE id = 'run-1'",
        );
        const row = rows[0];
        expect(row?.state).toBe('queued');
        // Waiting for its backoff, not claimed again at once.
        expect(row?.waits).toBe(true);
        expect(JSON.parse(row?.outcome ?? '{}')).toMatchObject({
          status: 'retrying',
          reason: 'its lease may have lapsed before the turn',
        });
        // Three starts given back, the fourth counted; the turn never ran.
        expect(store.startsRefused).toBe(4);
        expect(started).toEqual([]);
      },
    );
  }, 120_000);
  it('gives nothing back for a lapse count it did not write', async () => {
    // A row whose outcome says its starts lapsed but holds no count this code writes (another
    // writer, damage): its next lapse counts at once instead of being given back.
    await oneInstance(
      server,
      (pool) => new SlowAtEveryStart(pool, INSTANCE_A),
      async ({ pool, store, started, run }) => {
        await pool.query("UPDATE actions SET outcome = $1 WHERE id = 'run-1'", [
          JSON.stringify({
            status: 'retrying',
            reason: 'its lease may have lapsed before the turn',
            lapses: -1e9,
          }),
        ]);
        await run();
        await attemptCounted(pool);
        expect(store.startsRefused).toBe(1);
        expect(started).toEqual([]);
      },
    );
  }, 120_000);
});
