/**
 * `heartbeat now` on PostgreSQL waits for a new leader only as long as the last leader's lease
 * still runs: with no server running and the lease long run out (or never taken), it says so
 * after the pick-up wait, as on SQLite, instead of waiting a whole `store.leaseSeconds` more
 * (an hour here). A lease that still runs, its leader dead, is waited out, and no longer.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, writeInstanceConfig } from './helpers/pg-instances.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { killAll, runHookgate, tempDir } from './helpers/process.ts';

const skip = skipPostgres();
// Far longer than the commands below may take: a wait that counted the whole lease would
// outlast their timeout.
const LEASE_SECONDS = 3_600;

describe.skipIf(skip)('heartbeat now with no server on PostgreSQL', () => {
  let server: PostgresServer;
  let client: pg.Client;
  let config: string;
  const temp = tempDir('pg-hb-now-wait-');

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const written = writeInstanceConfig(temp.dir, 'a', url, {
      store: { leaseSeconds: LEASE_SECONDS },
    });
    config = written.config;
    // One instance ran (the schema is there, it took the lead), then died without a word.
    const instance = await startInstance(written.config, written.dataDir);
    instance.child.kill('SIGKILL');
    await instance.exited;
    client = new pg.Client({ connectionString: url });
    await client.connect();
  }, 240_000);

  afterAll(async () => {
    await client?.end().catch(() => undefined);
    await killAll();
    await server?.stop();
    temp.cleanup();
  });

  const openRequests = async () =>
    Number(
      (await client.query<{ n: string }>('SELECT count(*) AS n FROM control_requests')).rows[0]?.n,
    );

  it('the last lease ran out long ago: no server is running, said without waiting out a lease', async () => {
    await client.query("UPDATE leases SET until = now() - interval '1 hour'");
    const asked = await runHookgate(['heartbeat', 'now', '--config', config], {
      timeoutMs: 60_000,
    });
    expect(asked.code, asked.stderr).toBe(1);
    expect(asked.stderr).toMatch(/no server is running on .*within 5 s/);
    expect(await openRequests()).toBe(0);
  }, 90_000);

  it('no lease at all (the last leader stopped and gave it up): the same', async () => {
    await client.query('DELETE FROM leases');
    const asked = await runHookgate(['heartbeat', 'now', '--config', config], {
      timeoutMs: 60_000,
    });
    expect(asked.code, asked.stderr).toBe(1);
    expect(asked.stderr).toMatch(/within 5 s/);
    expect(await openRequests()).toBe(0);
  }, 90_000);

  it("a dead leader's lease that still runs is waited out, and no longer", async () => {
    await client.query(
      "INSERT INTO leases (name, owner, until) VALUES ('heartbeat', 'gone:1', now() + interval '10 seconds')",
    );
    const asked = await runHookgate(['heartbeat', 'now', '--config', config], {
      timeoutMs: 60_000,
    });
    expect(asked.code, asked.stderr).toBe(1);
    // The pick-up's 5 s and what was left of the lease (10 s, less the moments before it was read).
    expect(asked.stderr).toMatch(/within 1[0-5] s/);
    expect(await openRequests()).toBe(0);
  }, 90_000);
});
