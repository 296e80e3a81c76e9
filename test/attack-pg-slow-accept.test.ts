/**
 * An accept whose statement runs past its time on a database that is slow but alive: the
 * database ends the statement itself (a statement timeout a little under the accept's own
 * bound), so once the caller was told nothing was accepted no transaction is left running on
 * the server holding the batch's keys and a backend beyond poolSize (the client-side bound
 * alone dropped only its own end of the connection), and the retry the 503 invites is stored.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../engine/store/postgres/action-store.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { agentAction } from './runtime-store-contract.ts';

const skip = skipPostgres();

describe.skipIf(skip)('an accept that outlives its time on a slow database', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop(), 90_000);

  it('leaves nothing running on the server once it answered "nothing accepted"', async () => {
    const url = await server.createDatabase();
    const pool = openPool({ url, poolSize: 3 });
    const store = await openPostgresStore(pool);
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      // The first accept's statement takes 16 s (a loaded disk, a slow trigger, ...): slow, alive.
      await admin.query(`
        CREATE SEQUENCE slow_once;
        CREATE FUNCTION slow_accept() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF nextval('slow_once') = 1 THEN PERFORM pg_sleep(16); END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER slow_accept AFTER INSERT ON idempotency_keys
          FOR EACH ROW EXECUTE FUNCTION slow_accept();`);
      const request = () => {
        const action = agentAction('s', 'keyed');
        const now = Date.now();
        return store.appendOrGet({
          actions: [action],
          idempotency: [
            {
              key: 'slow-accept-key',
              fingerprint: 'fp',
              actionId: action.id,
              response: '{"ok":true}',
              createdAtMs: now,
              notBeforeMs: now - 3_600_000,
            },
          ],
        });
      };
      // Refused (the database's own statement timeout): "nothing accepted".
      await expect(request()).rejects.toThrow(/statement timeout/);
      // What the refusal left behind on the server: nothing running.
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE application_name = 'hookgate' AND state = 'active' AND xact_start IS NOT NULL`,
      );
      const orphans = rows[0]?.n ?? 0;
      // The caller sends again, as the 503 invites: the database is alive, the key free.
      const retried = await request().then(
        (outcome) => outcome,
        (err: Error) => err.message,
      );
      expect({ orphans, retried }).toEqual({ orphans: 0, retried: { stored: true } });
    } finally {
      await admin.end();
      await store.close();
      await closePool(pool);
    }
  }, 90_000);
});
