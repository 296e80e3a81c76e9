/**
 * A throwaway PostgreSQL server for tests: `initdb` into a fresh temp
 * directory, started with `pg_ctl` on a free port of 127.0.0.1, removed at
 * the end. It never touches the machine's shared server or its data. Run as
 * root, the server runs as the `postgres` system user (PostgreSQL refuses
 * root). Without the binaries or that user the tests skip with a reason.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';

export type PostgresAvailability =
  | { ok: true; bindir: string; user: { uid: number; gid: number } | undefined }
  | { ok: false; reason: string };

export type PostgresServer = {
  port: number;
  /** Connection URL of a database (default `postgres`). */
  url(database?: string): string;
  /** Create a fresh database (a unique name unless given); resolves to its URL. */
  /**
   * A fresh database, its URL; `template` copies that database (its schema and rows), which
   * must have no connection open at the time.
   */
  createDatabase(name?: string, template?: string): Promise<string>;
  /** Signal the postmaster itself (its backends live on until they notice). */
  kill(signal: NodeJS.Signals): void;
  /** SIGKILL the postmaster and every backend at once: a crash, open transactions and all. */
  crash(): void;
  /** Signal the postmaster and every backend at once (SIGSTOP: a frozen host; SIGCONT). */
  signalAll(signal: NodeJS.Signals): void;
  /** Start again on the same port and data (after a kill, or stopping it first). */
  restart(): Promise<void>;
  /** Stop at once and remove the data directory; safe to call twice. */
  stop(): Promise<void>;
};

const BINARIES = ['initdb', 'pg_ctl', 'postgres'];
// Generous: a loaded 2-core machine can take many seconds to start a server or recover it.
const START_TIMEOUT_S = 120;
const READY_TIMEOUT_MS = 120_000;

function hasBinaries(dir: string): boolean {
  return BINARIES.every((name) => existsSync(path.join(dir, name)));
}

function findBindir(): string | undefined {
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim();
    if (hasBinaries(dir)) return dir;
  } catch {
    // No pg_config (or only the client's): look where Debian installs servers.
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => path.join(root, v, 'bin')).find(hasBinaries);
}

function postgresUser(): { uid: number; gid: number } | undefined {
  try {
    const line = execFileSync('getent', ['passwd', 'postgres'], { encoding: 'utf8' }).trim();
    const [, , uid, gid] = line.split(':');
    if (uid === undefined || gid === undefined) return undefined;
    return { uid: Number(uid), gid: Number(gid) };
  } catch {
    return undefined;
  }
}

let availability: PostgresAvailability | undefined;

/** Whether tests can start a server here, and if not why (computed once). */
export function postgresAvailable(): PostgresAvailability {
  if (availability) return availability;
  const bindir = findBindir();
  if (!bindir) {
    availability = { ok: false, reason: 'no initdb found (install postgresql)' };
  } else if (process.getuid?.() === 0) {
    const user = postgresUser();
    availability = user
      ? { ok: true, bindir, user }
      : { ok: false, reason: 'running as root and there is no postgres user to run the server' };
  } else {
    availability = { ok: true, bindir, user: undefined };
  }
  return availability;
}

let reported = false;

/** True when PostgreSQL tests must skip; prints the reason once per test process. */
export function skipPostgres(): boolean {
  const found = postgresAvailable();
  if (found.ok) return false;
  if (!reported) console.warn(`PostgreSQL tests skipped: ${found.reason}`);
  reported = true;
  return true;
}

/** A port that was free a moment ago (the server may still lose it: callers retry). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

type Runner = {
  bindir: string;
  user: { uid: number; gid: number } | undefined;
  cwd: string;
};

/** Run a PostgreSQL program (as the postgres user when we are root) and wait for its exit. */
function run(
  runner: Runner,
  program: string,
  args: string[],
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(runner.bindir, program), args, {
      cwd: runner.cwd,
      env: { ...process.env, LC_ALL: 'C' },
      // pg_ctl's server writes to its log file, not to these pipes.
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(runner.user && { uid: runner.user.uid, gid: runner.user.gid }),
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '';
  }
}

/** Connect until the server answers a query (pg_ctl -w alone says little about TCP). */
async function waitUntilReady(url: string, log: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let delayMs = 20;
  for (;;) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(
          `PostgreSQL did not become ready: ${(err as Error).message}\n${readLog(log)}`,
        );
    } finally {
      await client.end().catch(() => undefined);
    }
    // Polling a condition, with backoff: the server is still starting or recovering.
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    delayMs = Math.min(delayMs * 2, 500);
  }
}

/** Start a fresh server in a temp directory; stop() removes everything it made. */
export async function startPostgres(): Promise<PostgresServer> {
  const found = postgresAvailable();
  if (!found.ok) throw new Error(`PostgreSQL unavailable: ${found.reason}`);
  const root = mkdtempSync(path.join(tmpdir(), 'hookgate-pg-'));
  if (found.user) chownSync(root, found.user.uid, found.user.gid);
  const runner: Runner = { bindir: found.bindir, user: found.user, cwd: root };
  const data = path.join(root, 'data');
  const log = path.join(root, 'server.log');
  let port = 0;
  let stopped = false;

  const postmasterPid = (): number | undefined => {
    try {
      const pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  // A test process that dies without afterAll leaves no server behind.
  const onExit = () => {
    const pid = postmasterPid();
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  const url = (database = 'postgres') =>
    `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(database)}`;

  const pgCtlStart = (onPort: number) =>
    run(runner, 'pg_ctl', [
      'start',
      '-w',
      '-t',
      String(START_TIMEOUT_S),
      '-D',
      data,
      '-l',
      log,
      '-o',
      `-p ${onPort} -k ${root} -c listen_addresses=127.0.0.1`,
    ]);

  const cleanup = async () => {
    if (stopped) return;
    stopped = true;
    process.off('exit', onExit);
    if (existsSync(path.join(data, 'postmaster.pid'))) {
      await run(runner, 'pg_ctl', ['stop', '-m', 'immediate', '-w', '-D', data]).catch(() => ({
        code: 1,
        output: '',
      }));
    }
    onExit();
  };

  try {
    const init = await run(runner, 'initdb', [
      '-D',
      data,
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--locale=C',
      // Only initdb skips fsync: the running server keeps the durable defaults.
      '--no-sync',
    ]);
    if (init.code !== 0) throw new Error(`initdb failed:\n${init.output}`);
    // Another process may take the free port before the server binds it: try a few.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const started = await pgCtlStart(port);
      if (started.code === 0) break;
      if (attempt >= 5) throw new Error(`pg_ctl start failed:\n${started.output}\n${readLog(log)}`);
    }
    await waitUntilReady(url(), log);
  } catch (err) {
    await cleanup();
    throw err;
  }

  const signalAll = (signal: NodeJS.Signals): void => {
    const pid = postmasterPid();
    if (!pid) throw new Error('PostgreSQL is not running');
    // Backends run in sessions of their own: find them by parent, then kill all together.
    const children = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .filter((name) => {
        try {
          const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
          return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
        } catch {
          return false;
        }
      });
    for (const target of [pid, ...children.map(Number)]) {
      try {
        process.kill(target, signal);
      } catch {
        // Gone already.
      }
    }
  };

  return {
    get port() {
      return port;
    },
    url,
    async createDatabase(
      name = `t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`,
      template?: string,
    ) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        const copy = template ? ` TEMPLATE ${client.escapeIdentifier(template)}` : '';
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}${copy}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    kill(signal) {
      const pid = postmasterPid();
      if (!pid) throw new Error('PostgreSQL is not running');
      process.kill(pid, signal);
    },
    crash: () => signalAll('SIGKILL'),
    signalAll,
    async restart() {
      const pid = postmasterPid();
      if (pid) {
        // Stopped (or already dead: pg_ctl then reports a stale pid file, which start handles).
        await run(runner, 'pg_ctl', ['stop', '-m', 'immediate', '-w', '-D', data]);
      }
      // After a SIGKILL the old backends may hold shared memory a little longer: retry.
      const deadline = Date.now() + READY_TIMEOUT_MS;
      for (;;) {
        const started = await pgCtlStart(port);
        if (started.code === 0) break;
        if (Date.now() > deadline)
          throw new Error(`pg_ctl restart failed:\n${started.output}\n${readLog(log)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await waitUntilReady(url(), log);
    },
    stop: cleanup,
  };
}
