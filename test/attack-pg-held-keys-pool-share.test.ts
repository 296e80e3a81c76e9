/**
 * Attack: an instance cut off mid-accept holds 40 idempotency keys, and their senders retry
 * here with the same keys, in one batch. After the batch's lock wait each keyed request is
 * tried alone; all 40 at once took every connection of the pool (10 by default), which the
 * runtime's claims and lease renewals share, for rounds of 2 s waits. Now at most three wait
 * on a key at a time, each briefly, and every one of them is refused (its key still held),
 * nothing stored.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../engine/store/postgres/action-store.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { agentAction } from './runtime-store-contract.ts';

const skip = skipPostgres();
const HELD = 40;

describe.skipIf(skip)('a batch of requests whose keys another transaction holds', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop(), 90_000);

  it('waits on at most three keys at a time, leaving the pool to the runtime', async () => {
    const url = await server.createDatabase();
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    pool.on('error', () => undefined);
    const store = await openPostgresStore(pool);
    const holder = new pg.Client({ connectionString: url });
    holder.on('error', () => undefined);
    await holder.connect();
    const watcher = new pg.Client({ connectionString: url });
    await watcher.connect();
    try {
      await holder.query('BEGIN');
      for (let i = 0; i < HELD; i++) {
        await holder.query(
          'INSERT INTO idempotency_keys (key, fingerprint, action_id, response, created_at_ms) VALUES ($1, $2, $3, $4, $5)',
          [`held-${i}`, 'fp', `id-${i}`, '{}', Date.now()],
        );
      }
      let settled = 0;
      const answers = Array.from({ length: HELD }, (_, i) => {
        const action = agentAction('s', `retry ${i}`);
        const now = Date.now();
        return store
          .appendOrGet({
            actions: [action],
            idempotency: [
              {
                key: `held-${i}`,
                fingerprint: `fp-${i}`,
                actionId: action.id,
                response: '{"ok":true}',
                createdAtMs: now,
                notBeforeMs: now - 3_600_000,
              },
            ],
          })
          .then(
            () => 'accepted',
            () => 'refused',
          )
          .finally(() => settled++);
      });
      // Backends of this database waiting for a lock, sampled until every request is answered.
      let most = 0;
      while (settled < HELD) {
        const { rows } = await watcher.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        most = Math.max(most, rows[0]?.n ?? 0);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await Promise.all(answers)).toEqual(Array(HELD).fill('refused'));
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(3);
      const { rows } = await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM actions');
      expect(rows[0]?.n).toBe(0);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
      await watcher.end();
      await store.close().catch(() => undefined);
      await pool.end().catch(() => undefined);
    }
  }, 120_000);
});
