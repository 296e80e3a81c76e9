/**
 * Attack (or a lost host): the path to the shared database goes silent without a reset (its
 * host gone, a partition that drops packets; here a loopback proxy that stops forwarding and
 * closes nothing). The failed-auth limiter's statements had no time limit of their own: its
 * one counts connection stayed in use for as long as TCP kept it (behind a proxy that still
 * answers, for good), so once the database answered again on new connections every failure on
 * that instance was still counted by it alone, and its read of the locks hung the same way,
 * so locks started on the other instances were never refused there. A flood of wrong tokens
 * meanwhile queued one count each, all landing together when the path healed. Now every
 * limiter statement has a deadline that drops its connection, and the counts waiting at once
 * are bounded.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { countingRefusedFailures } from '../engine/limiter-fallback.ts';
import { createLockouts } from '../engine/lockouts.ts';
import { createLogger } from '../engine/log.ts';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import type { AuthFailureLimiter, RateLimitSettings } from '../engine/rate-limit.ts';
import { createPostgresLimiter } from '../engine/store/postgres/limiter.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type FreezableProxy, startFreezableProxy } from './helpers/freezable-proxy.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { value } from './helpers/metrics-text.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();

const WRONG = 'wrong-token-0123456789';
const RATE_LIMIT = { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 };

type Answer = { status: number | string; ms: number };

describe.skipIf(skip)('attack: the path to the shared database goes silent', () => {
  let server: PostgresServer;
  // Of the whole process (every instance here): the cases read what their own requests added.
  let metrics: Metrics;
  const temp = tempDir('hookgate-pg-silent-');
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    metrics = createMetrics();
    server = await startPostgres();
  }, 180_000);

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }, 90_000);

  afterAll(async () => {
    metrics?.close();
    await server?.stop();
    temp.cleanup();
  }, 90_000);

  let instances = 0;
  async function startOn(url: string): Promise<Hookgate> {
    const dir = `${temp.dir}/${++instances}`;
    const raw = {
      hooks: { enabled: true, token: TOKEN, authRateLimit: RATE_LIMIT },
      // Loopback is the proxy in front: each case guesses from addresses of its own.
      server: { host: '127.0.0.1', port: 0, trustedProxies: ['127.0.0.1'] },
      store: { kind: 'postgres', url },
    };
    const loaded = resolveConfig(raw, { baseDir: dir, dataDir: dir, env: {} });
    const instance = await startHookgate(loaded, {
      logger: createLogger('silent'),
      runtime: false,
    });
    cleanups.push(() => instance.close());
    return instance;
  }

  /** A database reached through a proxy the test can silence. */
  async function silenceable(): Promise<{ url: string; proxy: FreezableProxy }> {
    const url = await server.createDatabase();
    const proxy = await startFreezableProxy(server.port);
    // Closed before the instances: what they still wait for on it ends at once.
    cleanups.push(() => proxy.close());
    return { url, proxy };
  }

  /** POST a token from an address; the status, or why there was none, and how long it took. */
  async function post(instance: Hookgate, token: string, from: string): Promise<Answer> {
    const started = Date.now();
    try {
      const res = await fetch(`${instance.url}/hooks/wake`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
          'x-forwarded-for': from,
        },
        body: JSON.stringify({ text: 'ping' }),
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      return { status: res.status, ms: Date.now() - started };
    } catch (err) {
      const ms = Date.now() - started;
      return { status: `no answer after ${ms} ms (${(err as Error).name})`, ms };
    }
  }

  /** Whether the instance refuses the address as locked (PUT: 405 otherwise, never counted). */
  async function refuses(instance: Hookgate, from: string): Promise<boolean> {
    const res = await fetch(`${instance.url}/hooks/wake`, {
      method: 'PUT',
      headers: { 'x-forwarded-for': from },
      signal: AbortSignal.timeout(10_000),
    });
    await res.arrayBuffer();
    return res.status === 429;
  }

  it("no refusal hangs, and once the database answers on new connections the instance shares its counts and sees the others' locks again", async () => {
    const { url, proxy } = await silenceable();
    const near = await startOn(proxy.through(url));
    const other = await startOn(url);
    const guesser = '198.51.100.1';
    // Warm: the counts' connection is open.
    expect((await post(near, WRONG, guesser)).status).toBe(401);

    proxy.freeze();
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await post(near, WRONG, guesser));
    // Each waits out its count (2 s), then is counted here; the third locks the address.
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 429]);
    for (const answer of answers) expect(answer.ms).toBeLessThan(10_000);

    // The database is reachable again, on new connections; the ones open are gone for good.
    proxy.strand();
    // Failures counted on `near` lock the address on `other` too (a fresh address each try).
    // Collected here and asserted after: a probe's failed expect is only retried.
    let n = 0;
    const tries: Answer[] = [];
    await waitFor(
      'an address locked by failures on the first instance to be refused on the other',
      async () => {
        const from = `203.0.113.${++n}`;
        for (let i = 0; i < RATE_LIMIT.maxFailures; i++) tries.push(await post(near, WRONG, from));
        // The other instance reads the locks every second.
        return waitFor('the lock to be read', () => refuses(other, from), 3_000);
      },
      90_000,
    );
    expect(tries.map((a) => a.status)).toEqual(tries.map(() => 401));
    for (const answer of tries) expect(answer.ms).toBeLessThan(10_000);
    // And a lock started on the other instance is refused on this one.
    const elsewhere = '203.0.113.200';
    for (let i = 0; i < RATE_LIMIT.maxFailures; i++)
      expect((await post(other, WRONG, elsewhere)).status).toBe(401);
    await waitFor('the lock to be refused here', () => refuses(near, elsewhere), 60_000);
  }, 240_000);

  it('one lock is counted once: locked here while the database was silent, then started there by the held-up counts when they land', async () => {
    const { url, proxy } = await silenceable();
    const direct = openPool({ url, poolSize: 1 });
    cleanups.push(() => closePool(direct));
    await migratePostgres(direct);
    // An instance's limiter as hookgate.ts assembles it (one count of lock starts for the store
    // and the fallback), with a statement deadline long enough that the held-up counts are
    // still waiting when the path heals, however loaded the machine.
    const main = openPool({ url: proxy.through(url), poolSize: 2 });
    // Its own wait for the connection as long (openPool's gives up after 10 s).
    const counts = new pg.Pool({
      connectionString: proxy.through(url),
      max: 1,
      connectionTimeoutMillis: 30_000,
    });
    counts.on('error', () => undefined);
    cleanups.push(async () => {
      await Promise.all([closePool(main), closePool(counts)]);
    });
    const settings: RateLimitSettings = { ...RATE_LIMIT, maxClients: 1000 };
    const lockouts = createLockouts(settings);
    const store = createPostgresLimiter(main, settings, {
      countsPool: counts,
      lockouts,
      statementDeadlineMs: 30_000,
    });
    const limiter = countingRefusedFailures(store, settings, { lockouts });
    cleanups.push(() => limiter.close());
    const counted = async () => value(await metrics.render(), 'hookgate_auth_lockouts_total');
    // Warm: the clock is read and the counts' connection open.
    await limiter.recordFailure('198.51.100.20', Date.now());
    const before = await counted();

    proxy.freeze();
    const guesser = '198.51.100.21';
    // At once: each waits out its count (2 s), then is counted here, and the third locks.
    const guesses = await Promise.allSettled(
      Array.from({ length: RATE_LIMIT.maxFailures }, () =>
        limiter.recordFailure(guesser, Date.now()),
      ),
    );
    expect(guesses.map((g) => g.status)).toEqual(guesses.map(() => 'rejected'));
    expect(limiter.lockedFor(guesser, Date.now())).toBeGreaterThan(0);
    expect((await counted()) - before).toBe(1);

    // The path heals before the counts' deadline: they land, and start the lock there too.
    proxy.thaw();
    const lockedThere = async (client: string) =>
      (
        await direct.query<{ locked: boolean }>(
          'SELECT locked_until > now() AS locked FROM auth_failures WHERE client = $1',
          [client],
        )
      ).rows[0]?.locked === true;
    await waitFor('the held-up counts to lock the address in the database', () =>
      lockedThere(guesser),
    );
    // A count sent after them has its answer once theirs were read (one connection, in order).
    const marker = '198.51.100.22';
    await store.recordFailure(marker, Date.now());
    // One lock, whichever counted it first.
    expect((await counted()) - before).toBe(1);
    expect(limiter.lockedFor(guesser, Date.now())).toBeGreaterThan(0);
  }, 120_000);

  it('a flood of wrong tokens from many addresses while the database is silent queues a bounded number of counts, and no more land once it answers', async () => {
    const { url, proxy } = await silenceable();
    const direct = openPool({ url, poolSize: 2 });
    cleanups.push(() => closePool(direct));
    await migratePostgres(direct);
    // The instance's two pools, as the backend opens them, through the proxy.
    const main = openPool({ url: proxy.through(url), poolSize: 2 });
    const counts = openPool({ url: proxy.through(url), poolSize: 1 });
    cleanups.push(async () => {
      await Promise.all([closePool(main), closePool(counts)]);
    });
    const settings: RateLimitSettings = { ...RATE_LIMIT, maxClients: 1000 };
    const maxPendingWrites = 10;
    const store = createPostgresLimiter(main, settings, {
      countsPool: counts,
      maxPendingWrites,
    });
    const limiter: AuthFailureLimiter = countingRefusedFailures(store, settings, { waitMs: 200 });
    cleanups.push(() => limiter.close());
    // Warm: the clock is read and the counts' connection open.
    await store.recordFailure('192.0.2.1', Date.now());

    proxy.freeze();
    const flood = Array.from({ length: 100 }, (_, i) => `198.18.0.${i}`);
    // Each settles (refused or unanswered in time: rejected, which the request path absorbs),
    // counted here.
    await Promise.allSettled(flood.map((client) => limiter.recordFailure(client, Date.now())));
    for (const client of flood) expect(limiter.hasFailures(client)).toBe(true);

    proxy.thaw();
    // Once a count sent after the flood is in the database, every count queued before it has
    // run or been dropped.
    const marker = '192.0.2.2';
    const stored = async (clients: string[]) =>
      (
        await direct.query<{ client: string }>(
          'SELECT client FROM auth_failures WHERE client = ANY($1)',
          [clients],
        )
      ).rows.length;
    await waitFor(
      'a count sent after the flood to reach the database',
      async () => {
        await store.recordFailure(marker, Date.now())?.catch(() => undefined);
        return (await stored([marker])) === 1;
      },
      60_000,
    );
    expect(await stored(flood)).toBeLessThanOrEqual(maxPendingWrites);
  }, 120_000);
  it('a slow database (the table locked) ends the reads of the locks this side gave up on, instead of running them on for its 30 s', async () => {
    const url = await server.createDatabase();
    const direct = openPool({ url, poolSize: 2 });
    cleanups.push(() => closePool(direct));
    await migratePostgres(direct);
    // The main pool, as the backend opens it: the server may run its statements 30 s.
    const main = openPool({ url, poolSize: 2 });
    cleanups.push(() => closePool(main));
    let checkouts = 0;
    main.on('acquire', () => {
      checkouts++;
    });
    const holder = await direct.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE auth_failures IN ACCESS EXCLUSIVE MODE');
    const settings: RateLimitSettings = { ...RATE_LIMIT, maxClients: 1000 };
    const deadlineMs = 2000;
    const store = createPostgresLimiter(main, settings, {
      statementDeadlineMs: deadlineMs,
      refreshMs: 50,
    });
    cleanups.push(() => store.close());
    cleanups.push(async () => {
      await holder.query('ROLLBACK');
      holder.release();
    });
    // The limiter's statements waiting on the server, and how long the oldest has.
    const waiting = async () =>
      (
        await direct.query<{ n: number; oldest_ms: number | null }>(
          `SELECT count(*)::int AS n,
             (extract(epoch FROM max(now() - query_start)) * 1000)::float8 AS oldest_ms
           FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'
             AND query LIKE '%auth_failures%'`,
        )
      ).rows[0] as { n: number; oldest_ms: number | null };
    const seen: Array<{ n: number; oldest_ms: number | null }> = [];
    await waitFor(
      'the limiter to have tried its reads a few times',
      async () => {
        seen.push(await waiting());
        return checkouts >= 5;
      },
      60_000,
    );
    seen.push(await waiting());
    // One read waits at a time, and none past this side's deadline.
    expect(Math.max(...seen.map((s) => s.n))).toBeLessThanOrEqual(1);
    expect(Math.max(...seen.map((s) => s.oldest_ms ?? 0))).toBeLessThan(deadlineMs);
  }, 120_000);

  it("a failure's count is given up a deadline after the failure, its wait for the database's clock included", async () => {
    const { url, proxy } = await silenceable();
    const direct = openPool({ url, poolSize: 2 });
    cleanups.push(() => closePool(direct));
    await migratePostgres(direct);
    // The reads reach the database (slowly: the table is locked), the counts do not.
    const main = openPool({ url, poolSize: 2 });
    const counts = openPool({ url: proxy.through(url), poolSize: 1 });
    cleanups.push(async () => {
      proxy.thaw();
      await Promise.all([closePool(main), closePool(counts)]);
    });
    const holder = await direct.connect();
    cleanups.push(async () => holder.release());
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE auth_failures IN ACCESS EXCLUSIVE MODE');
    proxy.freeze();
    const settings: RateLimitSettings = { ...RATE_LIMIT, maxClients: 1000 };
    const deadlineMs = 6000;
    const store = createPostgresLimiter(main, settings, {
      countsPool: counts,
      statementDeadlineMs: deadlineMs,
    });
    cleanups.push(() => store.close());

    // The first failure: its time needs the database's clock, which the first read brings.
    const count = store.recordFailure('198.51.100.40', Date.now()) as Promise<void>;
    const settled = count.then(
      () => ({ outcome: 'counted', at: Date.now() }),
      (err: Error) => ({ outcome: err.name, at: Date.now() }),
    );
    await waitFor('the first read to have waited on the lock for a second', async () => {
      const { rowCount } = await direct.query(
        `SELECT 1 FROM pg_stat_activity
         WHERE datname = current_database() AND wait_event_type = 'Lock'
           AND now() - query_start > interval '1 second'`,
      );
      return rowCount === 1;
    });
    const answeredFrom = Date.now();
    await holder.query('COMMIT');
    const { outcome, at } = await settled;
    expect(outcome).toBe('StatementDeadline');
    // Given up a deadline after the failure, not a deadline after the clock was known.
    expect(at - answeredFrom).toBeLessThan(deadlineMs - 500);
  }, 120_000);
});
