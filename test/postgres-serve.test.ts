/**
 * hookgate serving on PostgreSQL (store.kind postgres), as one instance
 * would: a wake reaches the main session, an agent run runs through the
 * runner and its history and summary are kept, an idempotent repeat is
 * answered with the first 200, and the command-line views read the same
 * database through --config.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { resolveConfig } from '../engine/config.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { runHookgate } from './helpers/process.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { agentRunner, readRecords, waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const WAIT_MS = 60_000;

describe.skipIf(skip)('hookgate on PostgreSQL', () => {
  let server: PostgresServer;
  let url: string;
  let hookgate: Hookgate;
  const temp = tempDir('hookgate-pg-serve-');
  const record = path.join(temp.dir, 'agent.jsonl');
  const configFile = path.join(temp.dir, 'hookgate.yaml');

  beforeAll(async () => {
    server = await startPostgres();
    url = await server.createDatabase();
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: { enabled: true, token: TOKEN, allowRequestSessionKey: true },
      store: { kind: 'postgres', url, leaseSeconds: 5 },
      agents: { defaults: { runner: agentRunner(record) } },
    };
    writeFileSync(configFile, JSON.stringify(raw));
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent') });
  }, 180_000);

  afterAll(async () => {
    await hookgate?.close();
    await server?.stop();
    temp.cleanup();
  });

  const post = (name: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${hookgate.url}/hooks/${name}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${TOKEN}`,
        ...headers,
      },
      body: JSON.stringify(body),
    });

  it('never names the password of the database it stores in', () => {
    expect(hookgate.storeDescription).toMatch(/^postgres:\/\/127\.0\.0\.1:\d+\//);
    expect(hookgate.storeDescription).not.toContain('@');
  });

  it('a wake becomes an event of the main session', async () => {
    const res = await post('wake', { text: 'disk almost full', mode: 'next-heartbeat' });
    expect(res.status).toBe(200);
    const events = await waitFor(
      'the wake event',
      async () => {
        const found = await hookgate.runtime?.store.events('main', 10);
        return found?.some((event) => event.text.includes('disk almost full')) ? found : undefined;
      },
      WAIT_MS,
    );
    expect(events[0]?.source).toBe('wake');
  });

  it('an agent run runs once through the runner, keeps its history, and posts its summary', async () => {
    const res = await post('agent', { message: 'summarise the build', sessionKey: 'hook:ci' });
    expect(res.status).toBe(200);
    const { runId } = (await res.json()) as { runId: string };
    const run = await waitFor(
      'the run to finish',
      async () => {
        const found = await hookgate.runtime?.store.run(runId);
        return found?.state === 'done' ? found : undefined;
      },
      WAIT_MS,
    );
    expect(run.attempts).toBe(1);
    const runs = readRecords(record).filter((r) => r.runId === runId && r.phase === 'start');
    expect(runs).toHaveLength(1);
    const history = await hookgate.runtime?.store.history(
      { agentId: 'main', sessionKey: 'hook:ci', kind: 'agent' },
      10,
    );
    expect(history?.map((turn) => turn.role)).toEqual(['user', 'assistant']);
  });

  it('a repeat with the same Idempotency-Key gets the first answer and runs nothing more', async () => {
    const body = { message: 'once only', sessionKey: 'hook:once' };
    const first = await post('agent', body, { 'idempotency-key': 'order-77' });
    const again = await post('agent', body, { 'idempotency-key': 'order-77' });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(await first.text());
    const counts = await hookgate.runtime?.store.countByState();
    const runs = await hookgate.runtime?.store.runs(100);
    expect(
      runs?.filter((row) => row.action.kind === 'agent' && row.action.message === 'once only'),
    ).toHaveLength(1);
    expect(counts?.dead).toBe(0);
  });

  it('the command-line views never create a store: an empty database has none yet', async () => {
    const empty = await server.createDatabase();
    const file = path.join(temp.dir, 'empty.yaml');
    writeFileSync(file, JSON.stringify({ store: { kind: 'postgres', url: empty } }));
    const runs = await runHookgate(['runs', '--config', file]);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toMatch(/No store at postgres:\/\/127\.0\.0\.1:\d+\/\S+ yet\./);
    const client = new pg.Client({ connectionString: empty });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT to_regclass('schema_version') AS found");
      expect(rows[0]?.found).toBeNull();
    } finally {
      await client.end();
    }
  });

  it('the command-line views read the same database through --config', async () => {
    const runs = await runHookgate(['runs', '--json', '--config', configFile]);
    expect(runs.code).toBe(0);
    expect(runs.stdout).toContain('summarise the build');
    const actions = await runHookgate(['actions', '--config', configFile]);
    expect(actions.code).toBe(0);
    expect(actions.stdout).toContain('hook=agent');
    expect(actions.stdout + actions.stderr).not.toContain(url);
  });

  it('a flood of wake-now requests on a second instance reaches the leader as a few requests, and a heartbeat runs', async () => {
    const second = await startHookgate(
      resolveConfig(
        {
          server: { host: '127.0.0.1', port: 0 },
          hooks: { enabled: true, token: TOKEN },
          store: { kind: 'postgres', url, leaseSeconds: 5 },
          agents: { defaults: { runner: agentRunner(record) } },
        },
        { baseDir: temp.dir, dataDir: temp.dir, env: {} },
      ),
      { logger: createLogger('silent') },
    );
    try {
      expect(second.runtime?.leading()).toBe(false);
      const before = (await hookgate.runtime?.store.heartbeats(100))?.length ?? 0;
      const started = Date.now();
      for (let i = 0; i < 60; i++) {
        const res = await fetch(`${second.url}/hooks/wake`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ text: `flood ${i}`, mode: 'now' }),
        });
        expect(res.status).toBe(200);
      }
      await waitFor(
        'a heartbeat on the leader that includes the flood',
        async () => {
          const beats = (await hookgate.runtime?.store.heartbeats(100)) ?? [];
          return beats.length > before && beats[0]?.state !== 'running';
        },
        WAIT_MS,
      );
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows } = await client.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM control_requests WHERE kind = 'heartbeat' AND created_at >= $1",
          [new Date(started)],
        );
        // At most one hand-over per half second (plus the deferred last one), never one per wake.
        const seconds = (Date.now() - started) / 1000;
        expect(rows[0]?.n).toBeGreaterThanOrEqual(1);
        expect(rows[0]?.n).toBeLessThanOrEqual(Math.ceil(seconds * 2) + 2);
        expect(rows[0]?.n).toBeLessThan(60);
      } finally {
        await client.end();
      }
    } finally {
      await second.close();
    }
  });
});

describe('a PostgreSQL store that cannot be reached', () => {
  it('stops the start with a message naming host and database, never the password', async () => {
    const temp = tempDir('hookgate-pg-unreachable-');
    try {
      const file = path.join(temp.dir, 'hookgate.yaml');
      writeFileSync(
        file,
        JSON.stringify({
          hooks: { enabled: true, token: TOKEN },
          // Port 1 on loopback: nothing listens there.
          store: { kind: 'postgres', url: 'postgres://hookgate:s3cret-pw@127.0.0.1:1/queue' },
        }),
      );
      const result = await runHookgate(['serve', '--config', file, '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('cannot open the store at postgres://127.0.0.1:1/queue');
      expect(result.stdout + result.stderr).not.toContain('s3cret-pw');
      // check does not contact the database, and names it without the password.
      const check = await runHookgate(['check', '--config', file]);
      expect(check.code).toBe(0);
      expect(check.stdout).toContain('store: PostgreSQL at postgres://127.0.0.1:1/queue');
      expect(check.stdout + check.stderr).not.toContain('s3cret-pw');
    } finally {
      temp.cleanup();
    }
  });
});
