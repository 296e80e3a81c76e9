/**
 * Attack (or a hung host): the database stops answering without closing its sockets (a frozen
 * host, a partition that drops packets: here the postmaster and its backends are SIGSTOPped).
 * Its own statement timeout cannot end anything, and an unkeyed request on a warm pooled
 * connection got no answer for as long as the database was away (70 s by hand, then a 200 to a
 * caller long gone). An accept's transaction is now bounded on this side: 503, nothing accepted.
 * A keyed request first looks its key up, and that read went unbounded (no answer while the
 * database was away): it is bounded the same way.
 */
import { readdirSync, readFileSync } from 'node:fs';
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

/** The postmaster listening on `port` and its children (the backends and helpers). */
function postgresPids(port: number): number[] {
  const procs = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  const cmdline = (pid: string) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      return [];
    }
  };
  const parent = (pid: string) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    } catch {
      return -1;
    }
  };
  const master = procs.find((pid) => {
    const args = cmdline(pid);
    return args[0]?.endsWith('postgres') && args.join(' ').includes(`-p ${port}`);
  });
  if (!master) throw new Error(`no postmaster on port ${port}`);
  return [Number(master), ...procs.filter((pid) => parent(pid) === Number(master)).map(Number)];
}

describe.skipIf(skip)('a PostgreSQL that stops answering', () => {
  let server: PostgresServer;
  const temp = tempDir('pg-frozen-');
  let instance: PgInstance;
  let frozen: number[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const { config, dataDir } = writeInstanceConfig(temp.dir, 'one', url, {
      store: { leaseSeconds: 30 },
    });
    instance = await startInstance(config, dataDir);
  }, 180_000);

  afterAll(async () => {
    for (const pid of frozen) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
    }
    await killAll();
    await server?.stop();
    temp.cleanup();
  });

  /** A wake request's status (or why none came) while the database is SIGSTOPped. */
  async function statusWhileFrozen(headers: Record<string, string> = {}): Promise<number | string> {
    frozen = postgresPids(server.port);
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
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
      for (const pid of frozen) process.kill(pid, 'SIGCONT');
      frozen = [];
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
