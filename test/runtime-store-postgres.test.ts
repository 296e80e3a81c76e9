/**
 * The runtime store contract on PostgreSQL, as a shared store: each open()
 * is another instance (its own pool and lease owner) on one database, a
 * fresh database per test on a throwaway server of the file's own.
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { type Backend, openBackend } from '../engine/store/backend.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { describeRuntimeStore } from './runtime-store-contract.ts';

const skip = skipPostgres();

let server: PostgresServer | undefined;
if (!skip) {
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  describeRuntimeStore(
    'PostgreSQL',
    async () => {
      if (!server) throw new Error('no PostgreSQL server');
      const url = await server.createDatabase();
      const store = {
        kind: 'postgres' as const,
        url,
        poolSize: 4,
        leaseSeconds: 30,
        retentionDays: 30,
      };
      const backends: Backend[] = [];
      const backend = async () => {
        const opened = await openBackend({ dataDir: '/nonexistent', store, commitDelayMs: 0 });
        backends.push(opened);
        return opened;
      };
      const accepting = await backend();
      return {
        open: async () => (await backend()).openRuntime(),
        async accept(actions) {
          const outcome = await accepting.actions.appendOrGet({ actions });
          if (!outcome.stored) throw new Error('the actions were not stored');
        },
        async deliveryStates(sourceId) {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            const { rows } = await client.query<{ state: string }>(
              'SELECT state FROM deliveries WHERE source_id = $1 ORDER BY created_at',
              [sourceId],
            );
            return rows.map((row) => row.state);
          } finally {
            await client.end();
          }
        },
        async backdateRequest(seq, ms) {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(
              `UPDATE control_requests SET created_at = created_at - make_interval(secs => $2),
                 handled_at = handled_at - make_interval(secs => $2) WHERE seq = $1`,
              [seq, ms / 1000],
            );
          } finally {
            await client.end();
          }
        },
        async requestRows() {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            const seqs = async (table: string) =>
              (
                await client.query<{ seq: string }>(`SELECT seq FROM ${table} ORDER BY seq`)
              ).rows.map((row) => Number(row.seq));
            return {
              requests: await seqs('control_requests'),
              answers: await seqs('control_answers'),
            };
          } finally {
            await client.end();
          }
        },
        async cleanup() {
          for (const opened of backends) await opened.close();
        },
      };
    },
    { shared: true },
  );
}
