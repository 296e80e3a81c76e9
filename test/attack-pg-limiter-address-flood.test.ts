/**
 * Attack on the failed-auth limiter shared through PostgreSQL: a flood of failures from more
 * than `maxClients` other addresses (a scan, an IPv6 /48 of /64s) pushed a client's count out
 * of every instance's view. An instance read only the newest `maxClients` counting addresses
 * (by the start of their window, which the instances' clock offset estimates shift by a few
 * milliseconds), and kept only the newest `maxClients` it counted itself; a client's success
 * reset only a count in that view. So after the flood the client's right token reset nothing,
 * and its earlier failures, with a few more, locked it out. Now a view that cannot hold every
 * count has every success reset; that must not lift or shorten anyone's lock, nor queue more
 * than one reset per address while the database holds them up.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthFailureLimiter, RateLimitSettings } from '../engine/rate-limit.ts';
import {
  createPostgresLimiter,
  type PostgresLimiterOptions,
} from '../engine/store/postgres/limiter.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';
import { fail } from './limiter-contract.ts';

const skip = skipPostgres();

const settings: RateLimitSettings = {
  maxFailures: 3,
  windowSeconds: 60,
  lockoutSeconds: 60,
  maxClients: 5,
};

/** More failing addresses than an instance keeps, each failing once (no lock), after `atMs`. */
async function flood(limiter: AuthFailureLimiter, atMs: number): Promise<void> {
  for (let i = 0; i <= settings.maxClients; i++) await fail(limiter, `198.51.100.${i}`, atMs + i);
}

/** As the request path does after a right token (authenticate.ts). */
async function succeed(limiter: AuthFailureLimiter, client: string): Promise<void> {
  if (limiter.hasFailures(client)) await limiter.reset(client);
}

describe.skipIf(skip)('attack: a flood of failing addresses hides a count from a success', () => {
  let server: PostgresServer;
  const pools: pg.Pool[] = [];
  const limiters: AuthFailureLimiter[] = [];

  // Two instances on a database of their own: no other test's rows crowd or thin the view.
  async function instances(
    options: PostgresLimiterOptions = { refreshMs: 50 },
  ): Promise<[AuthFailureLimiter, AuthFailureLimiter, pg.Pool]> {
    const url = await server.createDatabase();
    const [a, b] = [openPool({ url, poolSize: 2 }), openPool({ url, poolSize: 2 })];
    pools.push(a, b);
    await migratePostgres(a);
    const made: [AuthFailureLimiter, AuthFailureLimiter] = [
      createPostgresLimiter(a, settings, options),
      createPostgresLimiter(b, settings, options),
    ];
    limiters.push(...made);
    return [...made, a];
  }

  /** Once this resolves, a whole refresh of `reader` ran after everything `writer` wrote. */
  async function refreshedSince(writer: AuthFailureLimiter, reader: AuthFailureLimiter) {
    // Two locks made one after the other: the refresh that saw the second began after the one
    // that saw the first had read both the locks and the counting addresses.
    for (const marker of ['marker-1', 'marker-2']) {
      await fail(writer, marker, Date.now(), settings.maxFailures);
      await waitFor(`${marker} seen`, () => reader.lockedFor(marker, Date.now()) > 0);
    }
  }

  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    for (const p of pools) await closePool(p);
    await server?.stop();
  }, 90_000);

  it('a success on another instance resets a count that newer failing addresses crowd out of its read', async () => {
    const [one, two] = await instances();
    const victim = '203.0.113.9';
    await fail(one, victim, Date.now(), 2);
    // After the victim's failures: newer windows than its own, more of them than maxClients.
    await flood(one, Date.now());
    await refreshedSince(one, two);
    await succeed(two, victim);
    // One more failure: the first since the success, not the third.
    await fail(one, victim, Date.now());
    expect(one.lockedFor(victim, Date.now())).toBe(0);
    expect(two.lockedFor(victim, Date.now())).toBe(0);
  }, 60_000);

  it('a success resets a count its own instance dropped from its view before any read', async () => {
    // No read after the first: only what this instance counted tells it about the victim.
    const [one] = await instances({ refreshMs: 3_600_000 });
    const victim = '203.0.113.10';
    await fail(one, victim, Date.now(), 2);
    await flood(one, Date.now());
    await succeed(one, victim);
    await fail(one, victim, Date.now());
    expect(one.lockedFor(victim, Date.now())).toBe(0);
  }, 60_000);

  it('successes repeated while the database holds the resets up send one reset, not one each', async () => {
    const url = await server.createDatabase();
    const main = openPool({ url, poolSize: 2 });
    // The counts' connection of its own, as the backend opens it, named to be told apart.
    const counts = new pg.Pool({ connectionString: url, max: 1, application_name: 'counts' });
    pools.push(main, counts);
    await migratePostgres(main);
    const one = createPostgresLimiter(main, settings, { refreshMs: 50, countsPool: counts });
    limiters.push(one);
    await flood(one, Date.now());
    const client = '203.0.113.12';
    // Crowded: a success of any address resets.
    expect(one.hasFailures(client)).toBe(true);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE auth_failures IN ACCESS EXCLUSIVE MODE');
      const resets: Promise<void>[] = [one.reset(client)];
      // Reset since the last read: its further successes write nothing, crowded or not.
      expect(one.hasFailures(client)).toBe(false);
      // Resets asked for all the same (as concurrent requests could) wait for the one in flight.
      for (let i = 0; i < 99; i++) resets.push(one.reset(client));
      expect(resets).toHaveLength(100);
      await waitFor('the reset to wait for the table', async () => {
        const { rows } = await holder.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'counts' AND wait_event_type = 'Lock'",
        );
        return rows[0]?.n === 1;
      });
      // One statement on the counts' connection, none queued behind it.
      expect(counts.waitingCount).toBe(0);
      await holder.query('ROLLBACK');
      await Promise.all(resets);
    } finally {
      await holder.end();
    }
  }, 60_000);

  it('neither lifts nor shortens a lock: a success from a locked address during the flood', async () => {
    const [one, two, pool] = await instances();
    const locked = '203.0.113.11';
    await fail(one, locked, Date.now(), settings.maxFailures);
    const lockEnd = async () =>
      (
        await pool.query<{ until: Date }>(
          'SELECT locked_until AS until FROM auth_failures WHERE client = $1',
          [locked],
        )
      ).rows[0]?.until.getTime();
    const before = await lockEnd();
    expect(before).toBeGreaterThan(Date.now());
    await flood(one, Date.now());
    await refreshedSince(one, two);
    // The guard refuses a locked address first; a reset sent anyway (a view that lost the
    // lock) must still leave it.
    await two.reset(locked);
    await one.reset(locked);
    expect(await lockEnd()).toBe(before);
    expect(one.lockedFor(locked, Date.now())).toBeGreaterThan(50);
    expect(two.lockedFor(locked, Date.now())).toBeGreaterThan(50);
  }, 60_000);
});
