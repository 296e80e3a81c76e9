/**
 * An instance of the previous version (schema 5's fixed-window statement) may share the
 * database during an upgrade. An address whose failures alternate between the two versions
 * (a balancer in front of both) is locked at maxFailures, not about twice that: the new
 * statement keeps the fixed window's count the old one keeps, beside its sliding one.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthFailureLimiter, RateLimitSettings } from '../engine/rate-limit.ts';
import { createPostgresLimiter } from '../engine/store/postgres/limiter.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { createPostgresLimiter as createSchema5Limiter } from './fixtures/limiter-schema5.ts';

const skip = skipPostgres();

const settings: RateLimitSettings = {
  maxFailures: 20,
  windowSeconds: 60,
  lockoutSeconds: 60,
  maxClients: 100,
};

describe.skipIf(skip)('failed-auth limit with the previous version sharing the database', () => {
  let server: PostgresServer;
  const pools: pg.Pool[] = [];
  const limiters: AuthFailureLimiter[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    for (let i = 0; i < 2; i++) pools.push(openPool({ url, poolSize: 2 }));
    await migratePostgres(pools[0] as pg.Pool);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(limiters.map((l) => l.close()));
    for (const p of pools) await closePool(p);
    await server?.stop();
  });

  it('locks an address after maxFailures failures spread over a new and an old instance', async () => {
    const upgraded = createPostgresLimiter(pools[0] as pg.Pool, settings);
    const previous = createSchema5Limiter(pools[1] as pg.Pool, settings);
    limiters.push(upgraded, previous);
    const client = `203.0.113.7-${Date.now()}`;
    let failures = 0;
    const locked = () =>
      upgraded.lockedFor(client, Date.now()) > 0 || previous.lockedFor(client, Date.now()) > 0;
    // Alternating, all well within one window; stop at the lock (or at three times the bound).
    while (!locked() && failures < settings.maxFailures * 3) {
      const instance = failures % 2 === 0 ? upgraded : previous;
      await instance.recordFailure(client, Date.now());
      failures++;
    }
    // The 20th failure within the window makes the lock, whichever instance counted it.
    expect(failures).toBe(settings.maxFailures);
  }, 60_000);
});
