/**
 * The PostgreSQL failed-auth limiter's edges: a success on another instance resets a count also
 * when more addresses than maxClients have rows (a flood of other addresses must not crowd the
 * client's out of what each instance reads), and a maxFailures past PostgreSQL's integer (the
 * limit off in effect) still counts instead of failing every write.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import type { AuthFailureLimiter, RateLimitSettings } from '../engine/rate-limit.ts';
import { createPostgresLimiter } from '../engine/store/postgres/limiter.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';
import { fail } from './limiter-contract.ts';

const skip = skipPostgres();

describe.skipIf(skip)('PostgreSQL failed-auth limiter edges', () => {
  let server: PostgresServer;
  const pools: pg.Pool[] = [];
  const limiters: AuthFailureLimiter[] = [];

  async function database(): Promise<[pg.Pool, pg.Pool]> {
    const url = await server.createDatabase();
    const a = openPool({ url, poolSize: 2 });
    const b = openPool({ url, poolSize: 2 });
    pools.push(a, b);
    await migratePostgres(a);
    return [a, b];
  }

  function track<L extends AuthFailureLimiter>(limiter: L): L {
    limiters.push(limiter);
    return limiter;
  }

  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    for (const p of pools) await closePool(p);
    await server?.stop();
  }, 90_000);

  it('a success on another instance resets the count even when more than maxClients addresses have a row', async () => {
    const [first, second] = await database();
    const settings: RateLimitSettings = {
      maxFailures: 3,
      windowSeconds: 60,
      lockoutSeconds: 60,
      maxClients: 5,
    };
    const one = track(createPostgresLimiter(first, settings, { refreshMs: 50 }));
    const two = track(createPostgresLimiter(second, settings, { refreshMs: 50 }));
    // Other addresses that failed once (a scan, a flood from many addresses): more rows than
    // maxClients, none locked, within milliseconds of the victim's (no read picks the newest).
    for (let i = 0; i < 10; i++) await fail(one, `198.51.100.${i}`, Date.now());
    const victim = '203.0.113.9';
    await fail(one, victim, Date.now(), 2);
    // Two markers locked after the victim's failures: once `two` has seen the second, a whole
    // refresh of `two` (both of its reads) ran after the victim's failures were written.
    await fail(one, 'marker-1', Date.now(), 3);
    await waitFor('marker 1 seen', () => two.lockedFor('marker-1', Date.now()) > 0);
    await fail(one, 'marker-2', Date.now(), 3);
    await waitFor('marker 2 seen', () => two.lockedFor('marker-2', Date.now()) > 0);
    // The victim authenticates on `two` (authenticate.ts: reset only when hasFailures).
    if (two.hasFailures(victim)) await two.reset(victim);
    // One more failure on `one`: 1 since the success, not 3.
    await fail(one, victim, Date.now());
    expect(one.lockedFor(victim, Date.now())).toBe(0);
  }, 60_000);

  it('maxFailures above 2^31 - 1 (no maximum) still counts on PostgreSQL', async () => {
    const temp = tempDir('pg-limit-');
    try {
      // The config accepts it (the maximum was dropped; "the limit off in effect").
      const loaded = resolveConfig(
        {
          server: { host: '127.0.0.1', port: 0 },
          hooks: { enabled: true, token: TOKEN, authRateLimit: { maxFailures: 2 ** 31 } },
        },
        { baseDir: temp.dir, dataDir: temp.dir, env: {} },
      );
      expect(loaded.config.hooks.authRateLimit.maxFailures).toBe(2 ** 31);
    } finally {
      temp.cleanup();
    }
    const [first] = await database();
    const limiter = track(
      createPostgresLimiter(first, {
        maxFailures: 2 ** 31,
        windowSeconds: 60,
        lockoutSeconds: 60,
        maxClients: 100,
      }),
    );
    await expect(limiter.recordFailure('192.0.2.1', Date.now())).resolves.toBeUndefined();
    expect(limiter.hasFailures('192.0.2.1')).toBe(true);
  }, 60_000);
});
