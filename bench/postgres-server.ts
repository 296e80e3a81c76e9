/**
 * The PostgreSQL server behind the benchmark's PostgreSQL targets: a
 * throwaway one started with the tests' helper (initdb in a temp dir, a free
 * port of 127.0.0.1, the durable defaults: fsync and synchronous_commit on),
 * a fresh database per target, and the CPU time of its processes (the
 * postmaster and its children: backends, WAL writer, checkpointer) read from
 * /proc, so a run can say what each accept cost the database too.
 */
import pg from 'pg';
import { postgresAvailable, startPostgres } from '../test/helpers/postgres.ts';
import { descendantCpuMicros, parentPid, processCpuMicros } from './descendant-cpu.ts';

/** The bench's PostgreSQL server while it runs. */
export type BenchPostgres = {
  /** A fresh, empty database; resolves to its URL. */
  createDatabase(): Promise<string>;
  /** User + system CPU time so far, µs, of the server's live processes. */
  cpuMicros(): number;
  /** Stop the server and remove its files; safe to call twice. */
  stop(): Promise<void>;
};

/** Start the server, or say why the PostgreSQL targets cannot run here. */
export async function startBenchPostgres(): Promise<BenchPostgres | { skipped: string }> {
  const found = postgresAvailable();
  if (!found.ok) return { skipped: found.reason };
  let server: Awaited<ReturnType<typeof startPostgres>>;
  try {
    server = await startPostgres();
  } catch (err) {
    return { skipped: `PostgreSQL did not start: ${(err as Error).message}` };
  }
  try {
    const postmaster = await postmasterPid(server.url());
    return {
      createDatabase: () => server.createDatabase(),
      cpuMicros: () => processCpuMicros(postmaster) + descendantCpuMicros(postmaster),
      stop: () => server.stop(),
    };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** Every backend is a child of the postmaster: ask one backend for its pid, read its parent. */
async function postmasterPid(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backend = rows[0]?.pid;
    const postmaster = backend === undefined ? undefined : parentPid(backend);
    if (postmaster === undefined) throw new Error('cannot find the PostgreSQL postmaster in /proc');
    return postmaster;
  } finally {
    await client.end();
  }
}
