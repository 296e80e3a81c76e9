/**
 * Attack on the PostgreSQL store: the connection carrying an accept batch's COMMIT is lost
 * after the database committed it but before its answer came back (a backend terminated, a
 * database crash, a dropped connection). The batch's outcome is then unknown to hookgate, yet
 * every request of it was answered 503 `unavailable`, "nothing was accepted": the actions were
 * stored and run all the same, and a caller that believed the 503 and sent the request again
 * (as a 503 invites; no idempotency key is needed for a request "nothing" was accepted of)
 * had it run twice.
 *
 * The window is widened here the way a synchronous standby that lags widens it in production
 * (README: "With a synchronous standby, a failover loses nothing"): the COMMIT is durable
 * locally and waits for the standby; the backend is then terminated (pg_terminate_backend).
 * PostgreSQL says so itself: "the transaction has already committed locally". Now an
 * unconfirmed COMMIT is looked up before the batch is answered.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';

const skip = skipPostgres();

describe.skipIf(skip)('attack: an accept whose COMMIT answer is lost on PostgreSQL', () => {
  let server: PostgresServer;
  let hookgate: TestServer;
  let url: string;
  let admin: pg.Client;

  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
    hookgate = await startTestServer({ store: { kind: 'postgres', url } });
    admin = new pg.Client({ connectionString: server.url() });
    admin.on('error', () => undefined);
    await admin.connect();
  }, 180_000);

  afterAll(async () => {
    await admin?.query('ALTER SYSTEM RESET synchronous_standby_names').catch(() => undefined);
    await admin?.query('SELECT pg_reload_conf()').catch(() => undefined);
    await admin?.end().catch(() => undefined);
    await hookgate?.stop();
    await server?.stop();
  });

  const standby = async (name: string) => {
    await admin.query(`ALTER SYSTEM SET synchronous_standby_names = '${name}'`);
    await admin.query('SELECT pg_reload_conf()');
    // The reload reaches the backends when they next read their configuration.
    await new Promise((resolve) => setTimeout(resolve, 300));
  };

  it('a request whose COMMIT went unconfirmed but committed gets its 200, not "nothing was accepted"', async () => {
    expect((await hookgate.post('agent', { message: 'warm-up' })).status).toBe(200);
    await standby('absent_standby');
    const answer = hookgate.post('agent', { message: 'in-doubt' });
    // The COMMIT is waiting for the standby: committed locally, its answer not sent yet.
    let pid: number | undefined;
    for (let i = 0; i < 200 && pid === undefined; i++) {
      const { rows } = await admin.query<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'hookgate' AND wait_event = 'SyncRep'",
      );
      pid = rows[0]?.pid;
      if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pid).toBeDefined();
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const response = await answer;
    const body = await response.text();
    await standby('');

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM actions WHERE action::json->>'message' = 'in-doubt'",
      );
      const stored = rows[0]?.n ?? 0;
      // The COMMIT had committed locally: looked up afterwards, it is acknowledged, once.
      expect({ status: response.status, body, stored }).toMatchObject({ status: 200, stored: 1 });
    } finally {
      await db.end();
    }
  }, 60_000);
});
