/**
 * `heartbeat now` on PostgreSQL waits for a new leader only while one may still come: until a
 * grace of 5 s after the last leader's lease runs out (a leader that died keeps the lead until
 * then; one that stopped gave it up). With no server running and the lease long run out, it
 * says so after the pick-up wait, as on SQLite, instead of waiting a whole `store.leaseSeconds`
 * more (an hour here). A lease that cannot be read is waited as one of the command's own
 * leaseSeconds just renewed. Interrupted, or left with a store that fails, it says what became
 * of its request.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, writeInstanceConfig } from './helpers/pg-instances.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';
import { killAll, ROOT, runHookgate, spawnHookgate, tempDir } from './helpers/process.ts';

const skip = skipPostgres();

/** Whether process `pid` holds a TCP connection to 127.0.0.1:`port` (read from /proc). */
function connectedTo(pid: number, port: number): boolean {
  let inodes: Set<string>;
  try {
    inodes = new Set(
      readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
        try {
          const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
          const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
          return inode ? [inode] : [];
        } catch {
          return [];
        }
      }),
    );
  } catch {
    return false;
  }
  const remote = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return ['/proc/net/tcp', '/proc/net/tcp6'].some((table) => {
    if (!existsSync(table)) return false;
    return readFileSync(table, 'utf8')
      .split('\n')
      .slice(1)
      .some((line) => {
        const fields = line.trim().split(/\s+/);
        return fields[2]?.endsWith(remote) === true && inodes.has(fields[9] ?? '');
      });
  });
}
const LAUNCHER = path.join(ROOT, 'bin/hookgate.js');
// The system's own Node when it is older than hookgate needs: the launcher then runs the
// command as a child and passes signals on to it (this machine kind's system Node is 20).
const oldSystemNode = ((): string | undefined => {
  const candidate = '/usr/bin/node';
  if (!existsSync(candidate)) return undefined;
  const [major, minor] = execFileSync(candidate, ['-p', 'process.versions.node'], {
    encoding: 'utf8',
  })
    .trim()
    .split('.')
    .map(Number);
  const recent = (major ?? 0) > 24 || (major === 24 && (minor ?? 0) >= 16);
  return recent ? undefined : candidate;
})();
// Far longer than the commands below may take: a wait that counted the whole lease would
// outlast their timeout.
const LEASE_SECONDS = 3_600;

describe.skipIf(skip)('heartbeat now with no server on PostgreSQL', () => {
  let server: PostgresServer;
  let template: string;
  const clients: pg.Client[] = [];
  const temp = tempDir('pg-hb-now-wait-');

  beforeAll(async () => {
    server = await startPostgres();
    template = `hb_seed_${process.pid}`;
    const url = await server.createDatabase(template);
    const written = writeInstanceConfig(temp.dir, 'seed', url, {
      store: { leaseSeconds: LEASE_SECONDS },
    });
    // One instance ran (the schema is there, it took the lead), then died without a word.
    const instance = await startInstance(written.config, written.dataDir);
    instance.child.kill('SIGKILL');
    await instance.exited;
  }, 240_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await killAll();
    await server?.stop();
    temp.cleanup();
  });

  let scenes = 0;
  let copying = Promise.resolve();
  /**
   * A database of the case's own, copied from the one the instance ran on (so cases that wait
   * can run together), with a config for it (`config`) and one with a lease of 8 s
   * (`shortLease`), for the cases that wait a whole lease.
   */
  const scene = async () => {
    scenes += 1;
    const name = `hb_${scenes}`;
    // One copy at a time: a template may not be copied twice at once.
    const copied = copying.then(() => server.createDatabase(name, template));
    copying = copied.then(() => undefined);
    const url = await copied;
    const config = writeInstanceConfig(temp.dir, name, url, {
      store: { leaseSeconds: LEASE_SECONDS },
    }).config;
    const shortLease = writeInstanceConfig(temp.dir, `${name}-cli`, url, {
      store: { leaseSeconds: 8 },
    }).config;
    const client = new pg.Client({ connectionString: url });
    clients.push(client);
    await client.connect();

    const openRequests = async () =>
      Number(
        (await client.query<{ n: string }>('SELECT count(*) AS n FROM control_requests')).rows[0]
          ?.n,
      );
    return {
      config,
      shortLease,
      client,
      openRequests,
      /** Until the command's request is in the table (up to 30 s; the caller checks it is). */
      untilRequestOpen: async () => {
        const deadline = Date.now() + 30_000;
        while (Date.now() < deadline && (await openRequests()) === 0)
          await new Promise((resolve) => setTimeout(resolve, 20));
      },
      /** The lead's lease row running out at `until` (SQL). */
      setLease: (until: string) =>
        client.query(
          `INSERT INTO leases (name, owner, until) VALUES ('heartbeat', 'gone:1', ${until})
           ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until`,
        ),
      /**
       * The lease row as the command reads it, whenever that is: the table is locked until the
       * command's read of the lease waits on the lock, then the row is set to run out `offset`
       * (SQL) from the moment that read began (its now()), and the lock let go. So what the
       * command reads does not depend on how long it took to start on a loaded machine.
       */
      leaseAsRead: async (run: () => Promise<Asked>, offset: string): Promise<Asked> => {
        const locker = new pg.Client({ connectionString: url });
        await locker.connect();
        try {
          await locker.query('BEGIN');
          await locker.query('LOCK TABLE leases IN ACCESS EXCLUSIVE MODE');
          const asking = run();
          const began = await waitFor(
            "the command's read of the lease to wait",
            async () =>
              (
                await client.query<{ began: Date }>(
                  `SELECT query_start AS began FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'
                     AND query LIKE '%FROM leases WHERE name%'`,
                )
              ).rows[0]?.began,
            30_000,
            10,
          );
          await locker.query(
            `INSERT INTO leases (name, owner, until) VALUES ('heartbeat', 'gone:1', $1::timestamptz ${offset})
             ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until`,
            [began],
          );
          await locker.query('COMMIT');
          return await asking;
        } finally {
          await locker.end().catch(() => undefined);
        }
      },
      /** The backends serving the command (the one instance ran long ago: nobody else is in). */
      commandBackends: async (): Promise<number[]> =>
        (
          await client.query<{ pid: number }>(
            'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
          )
        ).rows.map((row) => row.pid),
    };
  };

  type Asked = Awaited<ReturnType<typeof runHookgate>>;
  const ask = (file: string): Promise<Asked> =>
    runHookgate(['heartbeat', 'now', '--config', file], { timeoutMs: 60_000 });

  // Waits that do not depend on how long the command took to start (a lease it reads is set
  // as it reads it): these run together.
  describe.concurrent('each on a database of its own, together', () => {
    it('the last lease ran out long ago: no server is running, said without waiting out a lease', async () => {
      const { config, setLease, openRequests } = await scene();
      await setLease("now() - interval '2 hours'");
      const asked = await ask(config);
      expect(asked.code, asked.stderr).toBe(1);
      expect(asked.stderr).toMatch(/no server is running on .*within 5 s/);
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it("a dead leader's lease that still runs is waited out with the grace, and no longer", async () => {
      const { config, leaseAsRead, openRequests } = await scene();
      const asked = await leaseAsRead(() => ask(config), "+ interval '8 seconds'");
      expect(asked.code, asked.stderr).toBe(1);
      // The pick-up's 5 s, the 8 s left of the lease when it was read, the grace's 5 s.
      expect(asked.stderr).toMatch(/no server is running on .*within 18 s/);
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it('a lease given up a moment ago (a clean stop): the grace is waited for a successor', async () => {
      const { config, leaseAsRead, openRequests } = await scene();
      const asked = await leaseAsRead(() => ask(config), "- interval '1 second'");
      expect(asked.code, asked.stderr).toBe(1);
      // The pick-up's 5 s, and what was left of the grace when the lease was read: 4 s.
      expect(asked.stderr).toMatch(/no server is running on .*within 9 s/);
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it('no lease at all (an older hookgate deleted it at its stop): read as one that just ran out', async () => {
      const { config, client, openRequests } = await scene();
      await client.query('DELETE FROM leases');
      const asked = await ask(config);
      expect(asked.code, asked.stderr).toBe(1);
      expect(asked.stderr).toMatch(/within 10 s/);
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it("a lease that cannot be read: waited as one of the command's own leaseSeconds just renewed", async () => {
      const { shortLease, client, openRequests } = await scene();
      await client.query('ALTER TABLE leases RENAME TO leases_away');
      const started = Date.now();
      const asked = await ask(shortLease);
      expect(asked.code, asked.stderr).toBe(1);
      expect(asked.stderr).toMatch(/within 18 s/);
      // It did wait that long (a slower machine only waits longer).
      expect(Date.now() - started).toBeGreaterThanOrEqual(18_000);
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it('a request that cannot be taken back (the store failed while it waited) is said to be left, with its number', async () => {
      const { config, client, setLease, openRequests } = await scene();
      await setLease("now() - interval '2 hours'");
      const asking = ask(config);
      // Once the request is there, its table goes away under the command.
      let seq: string | undefined;
      const deadline = Date.now() + 30_000;
      while (seq === undefined && Date.now() < deadline) {
        seq = (await client.query<{ seq: string }>('SELECT seq FROM control_requests')).rows[0]
          ?.seq;
        if (seq === undefined) await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(seq).toBeDefined();
      await client.query('ALTER TABLE control_requests RENAME TO control_requests_away');
      const asked = await asking;
      expect(asked.code, asked.stderr).toBe(1);
      expect(asked.stderr).toContain(
        `the request (${seq}) was not seen taken and could not be taken back`,
      );
      expect(asked.stderr).toContain(
        'a server started within 65 minutes of the asking may still run it',
      );
      await client.query('ALTER TABLE control_requests_away RENAME TO control_requests');
      // As said: it is still there.
      expect(await openRequests()).toBe(1);
    }, 90_000);

    it('interrupted (Ctrl-C) while it waits for a dead leader: the request is taken back, exit 130', async () => {
      const { config, setLease, openRequests, untilRequestOpen } = await scene();
      await setLease("now() + interval '1 hour'");
      const asking = spawnHookgate(['heartbeat', 'now', '--config', config]);
      await untilRequestOpen();
      expect(await openRequests()).toBe(1);
      asking.child.kill('SIGINT');
      const exit = await asking.waitForExit(30_000);
      expect(exit.code, asking.stderr()).toBe(130);
      expect(asking.stderr()).toContain('interrupted; the request was taken back');
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it.skipIf(!oldSystemNode)(
      'Ctrl-C through the launcher on an older system Node (the signal reaches the command twice): taken back once, exit 130',
      async () => {
        const { config, setLease, openRequests, untilRequestOpen } = await scene();
        await setLease("now() + interval '1 hour'");
        const launcher = spawn(
          oldSystemNode as string,
          [LAUNCHER, 'heartbeat', 'now', '--config', config],
          {
            cwd: ROOT,
            detached: true,
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let stderr = '';
        launcher.stderr?.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
        });
        const exited = new Promise<number | null>((resolve) =>
          launcher.on('exit', (code) => resolve(code)),
        );
        try {
          await untilRequestOpen();
          expect(await openRequests()).toBe(1);
          // As a terminal's Ctrl-C: to the whole process group, the launcher and the command.
          process.kill(-(launcher.pid as number), 'SIGINT');
          expect(await exited, stderr).toBe(130);
          expect(stderr).toContain('interrupted; the request was taken back');
          expect(await openRequests()).toBe(0);
        } finally {
          if (launcher.exitCode === null) process.kill(-(launcher.pid as number), 'SIGKILL');
        }
      },
      90_000,
    );
  });

  // One at a time, after those: each freezes the whole server.
  describe('one at a time', () => {
    it('a database that stops answering while it waits does not hold the command: it says what became of the request', async () => {
      const { config, setLease, openRequests, untilRequestOpen, commandBackends } = await scene();
      await setLease("now() - interval '2 hours'");
      const asking = spawnHookgate(['heartbeat', 'now', '--config', config]);
      await untilRequestOpen();
      expect(await openRequests()).toBe(1);
      const frozen = await commandBackends();
      expect(frozen.length).toBeGreaterThan(0);
      try {
        // The command's backends and the postmaster (a new connection would get a new backend).
        server.kill('SIGSTOP');
        for (const pid of frozen) process.kill(pid, 'SIGSTOP');
        // Looks of 2 s, the 5 s wait, a taking back of 8 s, a close of 2 s: well within this.
        const exit = await asking.waitForExit(45_000);
        expect(exit.code, asking.stderr()).toBe(1);
        expect(asking.stderr()).toMatch(
          /the request \(\d+\) was not seen taken and could not be taken back \(the store did not answer \(taking it back\) within 8 s\): a server started within 65 minutes of the asking may still run it/,
        );
      } finally {
        for (const pid of frozen) {
          try {
            process.kill(pid, 'SIGCONT');
          } catch {
            // Gone already.
          }
        }
        server.kill('SIGCONT');
      }
    }, 90_000);

    it('a database that does not answer when the command opens it: said in 8 s, nothing asked', async () => {
      const { config, openRequests } = await scene();
      server.kill('SIGSTOP');
      let asked: Awaited<ReturnType<typeof ask>>;
      try {
        asked = await ask(config);
      } finally {
        server.kill('SIGCONT');
      }
      expect(asked.code, asked.stderr).toBe(1);
      expect(asked.stderr).toContain(
        'the store did not answer (opening it) within 8 s; nothing was asked',
      );
      expect(await openRequests()).toBe(0);
    }, 90_000);

    it('interrupted while the store is being opened (the database does not answer): nothing asked, exit 130', async () => {
      const { config, openRequests } = await scene();
      server.kill('SIGSTOP');
      try {
        const asking = spawnHookgate(['heartbeat', 'now', '--config', config]);
        // Opening: its connection to the database is there (the kernel took it; nobody answers).
        await waitFor('the command to connect', async () =>
          connectedTo(asking.child.pid as number, server.port) ? true : undefined,
        );
        asking.child.kill('SIGINT');
        const exit = await asking.waitForExit(30_000);
        expect(exit.code, asking.stderr()).toBe(130);
        expect(asking.stderr()).toContain('interrupted before asking; nothing was asked');
      } finally {
        server.kill('SIGCONT');
      }
      expect(await openRequests()).toBe(0);
    }, 90_000);
  });
});
