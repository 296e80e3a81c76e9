/**
 * The failed-auth limiter on PostgreSQL: the limiter contract on a throwaway
 * server, then what only a limiter shared by several instances must do: a
 * lock reached through both instances, or begun on one, is refused on the
 * other within a refresh; a guesser costs a bounded number of writes; ended
 * rows go away; the local view stays bounded; an outage rejects the write
 * without bringing anything down; and two real hookgate instances refuse an
 * address that guessed wrong on the other one.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import {
  type AuthFailureLimiter,
  type RateLimitSettings,
  reportingStoreErrors,
} from '../engine/rate-limit.ts';
import {
  createPostgresLimiter,
  type PostgresLimiterOptions,
} from '../engine/store/postgres/limiter.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';
import { contractSettings, describeLimiter, fail } from './limiter-contract.ts';

const skip = skipPostgres();

/**
 * The contract's clock starts at 0; a shared store lives on the real one, where rows of 1970
 * are long over (and swept). Shifting every time to now keeps the contract's intervals.
 */
function fromNow(limiter: AuthFailureLimiter): AuthFailureLimiter {
  const origin = Date.now();
  return {
    lockedFor: (client, nowMs) => limiter.lockedFor(client, origin + nowMs),
    recordFailure: (client, nowMs) => limiter.recordFailure(client, origin + nowMs),
    hasFailures: (client) => limiter.hasFailures(client),
    reset: (client) => limiter.reset(client),
    close: () => limiter.close(),
  };
}

describe.skipIf(skip)('PostgreSQL failed-auth limiter', () => {
  let server: PostgresServer;
  let url: string;
  const pools: pg.Pool[] = [];
  const limiters: AuthFailureLimiter[] = [];
  // One pool per instance, as each hookgate opens its own.
  let first: pg.Pool;
  let second: pg.Pool;

  function pool(on = url): pg.Pool {
    const made = openPool({ url: on, poolSize: 4 });
    pools.push(made);
    return made;
  }

  function limiter(
    on: pg.Pool,
    settings: RateLimitSettings = contractSettings,
    options?: PostgresLimiterOptions,
  ): AuthFailureLimiter {
    const made = createPostgresLimiter(on, settings, options);
    limiters.push(made);
    return made;
  }

  async function query<T extends pg.QueryResultRow>(sql: string, values: unknown[] = []) {
    return (await first.query<T>(sql, values)).rows;
  }

  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
    first = pool();
    second = pool();
    await migratePostgres(first);
    // Every row written to the limiter's table, so a test can count what a guesser costs.
    await query(`
      CREATE TABLE limiter_writes (client text NOT NULL, op text NOT NULL);
      CREATE FUNCTION log_limiter_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO limiter_writes VALUES (coalesce(NEW.client, OLD.client), TG_OP);
        RETURN NULL;
      END $$;
      CREATE TRIGGER limiter_writes AFTER INSERT OR UPDATE OR DELETE ON auth_failures
        FOR EACH ROW EXECUTE FUNCTION log_limiter_write();`);
  }, 180_000);

  afterEach(async () => {
    await Promise.all(limiters.splice(0).map((made) => made.close()));
  });

  afterAll(async () => {
    for (const made of pools.splice(0)) await closePool(made);
    await server?.stop();
  });

  describeLimiter('postgres', async (settings) => fromNow(limiter(first, settings)), {
    propertyRuns: 50,
  });

  let n = 0;
  const address = () => `203.0.113.${++n}-${Date.now()}`;

  it('failures spread over two instances lock the address on both', async () => {
    const [one, two] = [limiter(first), limiter(second)];
    const a = address();
    await fail(one, a, Date.now(), 2);
    expect(two.lockedFor(a, Date.now())).toBe(0);
    await fail(two, a, Date.now());
    // The write that reached maxFailures answered the lock.
    expect(two.lockedFor(a, Date.now())).toBe(30);
    const start = Date.now();
    await waitFor('the lock on the other instance', () => one.lockedFor(a, Date.now()) > 0, 10_000);
    // One refresh (1 s) and its round trip, with room for a loaded machine.
    expect(Date.now() - start).toBeLessThan(2500);
    expect(one.lockedFor(a, Date.now())).toBeGreaterThanOrEqual(28);
    // The lock took the count with it: a success there has nothing to reset.
    expect(one.hasFailures(a)).toBe(false);
  });

  it('a correct credential on one instance clears the failures another counted (a balancer spreads a client)', async () => {
    const [one, two] = [limiter(first), limiter(second)];
    const a = address();
    await fail(one, a, Date.now(), 2);
    // Within a refresh the other instance knows of the count, and its success resets it.
    await waitFor('the count seen by the other instance', () => two.hasFailures(a), 10_000);
    await two.reset(a);
    await fail(one, a, Date.now());
    expect(one.lockedFor(a, Date.now())).toBe(0);
  });

  it('a lock begun on one instance is refused on the other within a second', async () => {
    const [one, two] = [limiter(first), limiter(second)];
    const a = address();
    await fail(one, a, Date.now(), 3);
    expect(one.lockedFor(a, Date.now())).toBe(30);
    const start = Date.now();
    await waitFor('the lock on the other instance', () => two.lockedFor(a, Date.now()) > 0, 10_000);
    expect(Date.now() - start).toBeLessThan(2500);
    // A success on the other instance lifts nothing.
    await two.reset(a);
    await new Promise((resolve) => setTimeout(resolve, 0));
    const fresh = limiter(second);
    await waitFor('a fresh instance to read the lock', () => fresh.lockedFor(a, Date.now()) > 0);
  });

  it('hosts whose clocks disagree by an hour still share windows and locks', async () => {
    const hourAhead = () => Date.now() + 3_600_000;
    const [one, two] = [limiter(first), limiter(second, contractSettings, { clock: hourAhead })];
    const a = address();
    await fail(one, a, Date.now(), 2);
    // An hour later by its own clock, but within the window: the third failure locks.
    await fail(two, a, hourAhead());
    expect(two.lockedFor(a, hourAhead())).toBe(30);
    await waitFor('the lock on the other host', () => one.lockedFor(a, Date.now()) > 0, 10_000);
    expect(one.lockedFor(a, Date.now())).toBeGreaterThanOrEqual(28);
    // And the other way: a lock made here, read by the host an hour ahead in its own clock.
    const b = address();
    await fail(one, b, Date.now(), 3);
    await waitFor('the lock there', () => two.lockedFor(b, hourAhead()) > 0, 10_000);
    expect(two.lockedFor(b, hourAhead())).toBeGreaterThanOrEqual(28);
    expect(two.lockedFor(b, hourAhead())).toBeLessThanOrEqual(30);
  });

  it('a guesser costs maxFailures writes per window, one more per instance that had not seen the lock, none while locked', async () => {
    const instances = [limiter(first), limiter(second)];
    const a = address();
    const writes = async () =>
      Number(
        (
          await query<{ n: string }>('SELECT count(*) AS n FROM limiter_writes WHERE client = $1', [
            a,
          ])
        )[0]?.n,
      );
    // As the guard does: a locked address is refused before anything is counted.
    let refused = 0;
    const guess = async (i: number) => {
      const instance = instances[i % 2] as AuthFailureLimiter;
      if (instance.lockedFor(a, Date.now()) > 0) refused++;
      else await instance.recordFailure(a, Date.now());
    };
    for (let i = 0; i < 6; i++) await guess(i);
    // Three failures lock; the instance that had not seen the lock wrote once and learnt it.
    expect(await writes()).toBe(4);
    expect(refused).toBe(2);
    for (let i = 0; i < 200; i++) await guess(i);
    expect(refused).toBe(202);
    expect(await writes()).toBe(4);
  });

  it('deletes rows whose window and lock are both over, and keeps a lock in force', async () => {
    const settings = { ...contractSettings, windowSeconds: 1, lockoutSeconds: 1 };
    const counted = address();
    const locked = address();
    const sweeper = limiter(first, settings, { refreshMs: 100, sweepMs: 100 });
    const longLock = limiter(second, { ...contractSettings, windowSeconds: 1 });
    // The lock's window starts first, so a sweep that deletes the count passed over the lock.
    await fail(longLock, locked, Date.now(), 3);
    await fail(sweeper, counted, Date.now(), 2);
    const rows = async (client: string) =>
      (await query('SELECT 1 FROM auth_failures WHERE client = $1', [client])).length;
    expect(await rows(counted)).toBe(1);
    await waitFor('the ended row to be swept', async () => (await rows(counted)) === 0, 10_000);
    // Its window (1 s) is over too, but its lock (30 s) is not.
    expect(await rows(locked)).toBe(1);
  });

  it('keeps at most maxClients locks it did not make, the newest', async () => {
    // A database of its own: the locks of the tests above would take the newest places.
    const own = await server.createDatabase();
    const [makerPool, readerPool] = [pool(own), pool(own)];
    await migratePostgres(makerPool);
    const maker = limiter(makerPool, { ...contractSettings, maxFailures: 1 });
    const clients = Array.from({ length: 12 }, address);
    for (const client of clients) await maker.recordFailure(client, Date.now());
    // Lock ends a millisecond apart at least, so "newest" is well defined.
    const reader = limiter(readerPool, { ...contractSettings, maxFailures: 1, maxClients: 10 });
    await waitFor('the locks read', () => reader.lockedFor(clients[11] as string, Date.now()) > 0);
    const seen = clients.map((client) => reader.lockedFor(client, Date.now()) > 0);
    expect(seen.filter(Boolean)).toHaveLength(10);
    expect(seen.slice(2).every(Boolean)).toBe(true);
  });

  describe('two hookgate instances on one database', () => {
    const instances: Hookgate[] = [];
    const temp = tempDir('hookgate-pg-limit-');

    beforeAll(async () => {
      const own = await server.createDatabase();
      const raw = {
        server: { host: '127.0.0.1', port: 0 },
        hooks: {
          enabled: true,
          token: TOKEN,
          authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
        },
        store: { kind: 'postgres', url: own },
      };
      for (let i = 0; i < 2; i++) {
        const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
        instances.push(
          await startHookgate(loaded, { logger: createLogger('silent'), runtime: false }),
        );
      }
    }, 180_000);

    afterAll(async () => {
      for (const instance of instances.splice(0)) await instance.close();
      temp.cleanup();
    });

    const wake = (instance: Hookgate | undefined, token: string) =>
      fetch(`${instance?.url}/hooks/wake`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ text: 'ping' }),
      });

    it('wrong tokens sent to one instance get the address refused (429) by the other', async () => {
      const [one, two] = instances;
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await wake(one, 'wrong-token-0123456789')).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
      // Even the right token: nothing lifts a lock early.
      const refused = await waitFor(
        'the other instance to refuse the address',
        async () => {
          const res = await wake(two, TOKEN);
          return res.status === 429 ? res : undefined;
        },
        10_000,
        100,
      );
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);
    });
  });

  it('failed authentications the database holds up do not hold up acceptance (the limiter writes on its own connection)', async () => {
    const own = await server.createDatabase();
    const temp = tempDir('hookgate-pg-limit-flood-');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        // No lock in reach: every wrong token is a count written to the database.
        authRateLimit: { maxFailures: 1000, windowSeconds: 60, lockoutSeconds: 60 },
      },
      store: { kind: 'postgres', url: own, poolSize: 3 },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    const instance = await startHookgate(loaded, {
      logger: createLogger('silent'),
      runtime: false,
    });
    const holder = new pg.Client({ connectionString: own });
    await holder.connect();
    const post = (token: string, signal?: AbortSignal) =>
      fetch(`${instance.url}/hooks/wake`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ text: 'ping' }),
        ...(signal && { signal }),
      });
    try {
      // A failure counted first: the right token below then clears the address's count.
      expect((await post('wrong-token-0123456789')).status).toBe(401);
      // Every count of a failure now waits for this transaction.
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE auth_failures IN ACCESS EXCLUSIVE MODE');
      const flood = Array.from({ length: 12 }, () => post('wrong-token-0123456789'));
      await waitFor('the counts to wait for the lock', async () => {
        const { rows } = await holder.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'hookgate'",
        );
        return (rows[0]?.n ?? 0) >= 1;
      });
      // More wrong tokens than the instance has connections are waiting: a right one is
      // still accepted at once, its reset of the address's count not waited for.
      const res = await post(TOKEN, AbortSignal.timeout(5_000));
      expect(res.status).toBe(200);
      await holder.query('ROLLBACK');
      expect(new Set((await Promise.all(flood)).map((r) => r.status))).toEqual(new Set([401]));
    } finally {
      await holder.end();
      await instance.close();
      temp.cleanup();
    }
  });

  // Last: it stops the server every test above shares.
  it('during an outage a failure rejects, the wrapper absorbs it, locks known stay, nothing crashes', async () => {
    const own = pool();
    const plain = limiter(own, contractSettings, { refreshMs: 50 });
    const warnings: string[] = [];
    const logger = createLogger('silent');
    const wrapped = reportingStoreErrors(plain, {
      warn: (...args: unknown[]) => {
        warnings.push(String(args.at(-1)));
      },
      info: logger.info.bind(logger),
    });
    const lockedBefore = address();
    await fail(plain, lockedBefore, Date.now(), 3);
    const a = address();
    server.crash();
    await expect(plain.recordFailure(a, Date.now())).rejects.toThrow();
    await expect(wrapped.recordFailure(a, Date.now())).resolves.toBeUndefined();
    await expect(wrapped.reset(a)).resolves.toBeUndefined();
    expect(warnings).toEqual([
      'failed-auth limiter store unreachable: failures are counted by this instance alone until it answers',
    ]);
    // Refreshes fail meanwhile (every 50 ms); the lock this instance knows still holds.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(plain.lockedFor(lockedBefore, Date.now())).toBeGreaterThan(0);
    await server.restart();
    // UNLOGGED: a crash empties the table, so the count starts again from nothing.
    await waitFor('the store to answer again', () =>
      Promise.resolve(plain.recordFailure(a, Date.now())).then(
        () => true,
        () => false,
      ),
    );
    expect(plain.hasFailures(a)).toBe(true);
  }, 180_000);
});
