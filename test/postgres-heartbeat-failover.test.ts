/**
 * `heartbeat now` asked right after the leader of several PostgreSQL instances died: for up to
 * `store.leaseSeconds` nobody leads. The command waits that long too on PostgreSQL (it said "no
 * server is running" after 5 s, withdrew the request and exited 1, while another instance was
 * about to lead), and the instance that leads next takes it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PgInstance, startInstance, writeInstanceConfig } from './helpers/pg-instances.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { killAll, runHookgate, tempDir } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const LEASE_SECONDS = 12;

describe.skipIf(skip)('heartbeat now while the lead moves', () => {
  let server: PostgresServer;
  let url: string;
  let client: pg.Client;
  const temp = tempDir('pg-hb-failover-');
  const instances: PgInstance[] = [];

  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
    for (const name of ['a', 'b']) {
      const { config, dataDir } = writeInstanceConfig(temp.dir, name, url, {
        store: { leaseSeconds: LEASE_SECONDS },
      });
      instances.push(await startInstance(config, dataDir));
    }
    client = new pg.Client({ connectionString: url });
    await client.connect();
  }, 240_000);

  afterAll(async () => {
    await client?.end().catch(() => undefined);
    await killAll();
    await server?.stop();
    temp.cleanup();
  });

  const leaderOwner = async (): Promise<string | undefined> => {
    const { rows } = await client.query<{ owner: string }>(
      "SELECT owner FROM leases WHERE name = 'heartbeat' AND until > now()",
    );
    return rows[0]?.owner;
  };

  it('heartbeat now, asked right after the leader died, is taken by the instance that leads next', async () => {
    const owner = await waitFor('a leader', leaderOwner, 30_000);
    const leader = instances.find((i) => owner.split(':')[1] === String(i.child.pid));
    const survivor = instances.find((i) => i !== leader);
    expect(leader, `leader ${owner}`).toBeDefined();
    if (!leader || !survivor) return;

    leader.child.kill('SIGKILL');
    await leader.exited;

    const asked = await runHookgate(['heartbeat', 'now', '--config', survivor.config], {
      timeoutMs: 60_000,
    });
    expect(asked.stderr).not.toMatch(/no server is running/);
    expect(asked.code, `stdout: ${asked.stdout}\nstderr: ${asked.stderr}`).toBe(0);

    // And the survivor did take the lead within the lease.
    const next = await waitFor('the survivor to lead', leaderOwner, LEASE_SECONDS * 1000 + 20_000);
    expect(next.split(':')[1]).toBe(String(survivor.child.pid));
  }, 120_000);
});
