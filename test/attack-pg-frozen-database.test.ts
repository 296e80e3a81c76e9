import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  INSTANCE_TOKEN,
  type PgInstance,
  postTo,
  startInstance,
  writeInstanceConfig,
} from './helpers/pg-instances.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { killAll, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();

describe.skipIf(skip)('a PostgreSQL that stops answering', () => {
  let server: PostgresServer;
  const temp = tempDir('pg-frozen-');
  let instance: PgInstance;
  let frozen = false;

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const { config, dataDir } = writeInstanceConfig(temp.dir, 'one', url, {
      store: { leaseSeconds: 30 },
    });
    instance = await startInstance(config, dataDir);
  }, 180_000);

  afterAll(async () => {
    if (frozen) server.signalAll('SIGCONT');
    await killAll();
    await server?.stop();
    temp.cleanup();
  });

  /** A wake request's status (or why none came) while the database is SIGSTOPped. */
  async function statusWhileFrozen(headers: Record<string, string> = {}): Promise<number | string> {
    // The postmaster and every backend (one that exits meanwhile needs no freezing).
    server.signalAll('SIGSTOP');
    frozen = true;
    try {
      // Bounded well beyond every documented wait (2 s lock wait, ~2 s in-doubt look-up,
      // 10 s for a pooled connection): a hang here is the defect.
      const started = Date.now();
      try {
        const res = await fetch(`${instance.url}/hooks/wake`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${INSTANCE_TOKEN}`,
            ...headers,
          },
          body: JSON.stringify({ text: 'while the database is frozen' }),
          signal: AbortSignal.timeout(45_000),
        });
        return res.status;
      } catch (err) {
        return `no answer after ${Date.now() - started} ms (${(err as Error).name})`;
      }
    } finally {
      server.signalAll('SIGCONT');
      frozen = false;
    }
  }

  it('an unkeyed request gets 503 (not a hang) while the database does not answer', async () => {
    // Warm: the instance works and its pool holds connections.
    expect((await postTo(instance, 'wake', { text: 'before' })).status).toBe(200);
    await waitFor(
      'the pool to be in use',
      async () => (await postTo(instance, 'wake', { text: 'warm' })).status === 200,
    );

    expect(await statusWhileFrozen()).toBe(503);
  }, 120_000);

  it('a keyed request gets 503 (not a hang): its key look-up is bounded too while the database does not answer', async () => {
    // Warm: the instance works and its pool holds connections.
    expect((await postTo(instance, 'wake', { text: 'before' })).status).toBe(200);
    await waitFor(
      'the pool to be in use',
      async () =>
        (
          await postTo(
            instance,
            'wake',
            { text: 'warm' },
            { headers: { 'idempotency-key': `warm-${Date.now()}` } },
          )
        ).status === 200,
    );

    expect(await statusWhileFrozen({ 'idempotency-key': `frozen-${Date.now()}` })).toBe(503);
  }, 120_000);
});
