/**
 * Attack: starve the leading instance's connection pool (a flood holds every
 * connection) just as its heartbeat starts. Its lead checks wait in the same
 * pool, so the lead lapses and another instance takes it and runs the
 * heartbeat over the pending events. When the pool frees up, the starved
 * instance's heartbeat must not go on to run its turn over those same events
 * beside the new leader's: the agent would see each event twice.
 */
import pino from 'pino';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHeartbeat } from '../engine/runtime/heartbeat.ts';
import { startLeadership } from '../engine/runtime/leadership-loop.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from '../engine/runtime/prompt-budget.ts';
import type { Runner, RunRequest } from '../engine/runtime/runners/runner.ts';
import { closePool, openPool } from '../engine/store/postgres/pool.ts';
import { PostgresRuntimeStore } from '../engine/store/postgres/runtime-store.ts';
import { migratePostgres } from '../engine/store/postgres/schema.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();
const LEASE_MS = 2_000;
const MAIN = 'main';
const logger = pino({ level: 'silent' });

/** A runner noting each turn's message under `name`; answers once `hold` settles. */
function notingRunner(turns: string[], name: string, hold: Promise<void>): Runner {
  return {
    async run(request: RunRequest) {
      turns.push(`${name}: ${request.message}`);
      await hold;
      return { status: 'ok', reply: `${name} answered` };
    },
  };
}

/** One instance: its own pool over the database, its lead, its heartbeat (asked, never scheduled). */
async function instance(url: string, name: string, poolSize: number, runner: Runner) {
  const pool = openPool({ url, poolSize });
  const store = new PostgresRuntimeStore(pool, { owner: name, leaseMs: LEASE_MS });
  const controller = new AbortController();
  const loop = await startLeadership({
    leadership: store.leadership,
    leaseMs: LEASE_MS,
    everyMs: 100,
    gained: async () => {
      await store.recoverHeartbeats();
    },
    logger,
  });
  const heartbeat = createHeartbeat({
    store,
    agent: () => ({ id: 'main', runner, workspace: '/tmp', model: undefined, timeoutSeconds: 30 }),
    adapters: new Map(),
    settings: {
      mainKey: MAIN,
      prompt: 'Anything to do?',
      ackToken: 'HEARTBEAT_OK',
      coalesceMs: 0,
      schedule: { kind: 'off' },
      maxEvents: 100,
      maxPromptBytes: DEFAULT_MAX_PROMPT_BYTES,
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      lastRoute: { pinned: false, ownerRoutes: [] },
      leaseMs: LEASE_MS,
    },
    logger,
    signal: controller.signal,
    leading: () => loop.leading(),
    forward: () => undefined,
  });
  return {
    pool,
    store,
    loop,
    heartbeat,
    async close() {
      loop.stop();
      controller.abort();
      await heartbeat.stop();
      await closePool(pool);
    },
  };
}

describe.skipIf(skip)('attack: the leader starved of connections as its heartbeat starts', () => {
  let server: PostgresServer;
  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);
  afterAll(async () => server?.stop());

  it('runs no turn over the events once another instance took the lead meanwhile', async () => {
    const url = await server.createDatabase();
    const setup: pg.Pool = openPool({ url, poolSize: 1 });
    await migratePostgres(setup);
    await closePool(setup);
    const turns: string[] = [];
    const releaseB = Promise.withResolvers<void>();
    const a = await instance(url, 'instance-a', 1, notingRunner(turns, 'a', Promise.resolve()));
    const b = await instance(url, 'instance-b', 1, notingRunner(turns, 'b', releaseB.promise));
    try {
      expect(a.loop.leading()).toBe(true);
      expect(b.loop.leading()).toBe(false);
      await a.store.addEvent({
        sessionKey: MAIN,
        text: 'deploy failed',
        source: 'wake',
        trusted: true,
      });

      // The flood: every connection of a's pool held, so its lead checks and its heartbeat's
      // statements wait behind it.
      const flood = await a.pool.connect();
      a.heartbeat.requestNow('wake');
      await waitFor('b to take the lead', async () => b.loop.leading() || undefined, 30_000, 20);
      expect(a.loop.leading()).toBe(false);
      b.heartbeat.requestNow('wake');
      await waitFor('b to start its turn', async () => turns.length > 0 || undefined, 30_000, 20);

      // The flood ends while b's turn runs.
      flood.release();
      await a.heartbeat.idle();
      releaseB.resolve();
      await b.heartbeat.idle();

      const withEvent = turns.filter((turn) => turn.includes('deploy failed'));
      expect(withEvent).toEqual([expect.stringMatching(/^b: /)]);
      // a's heartbeat did reach the store once the flood ended, and gave its turn up there.
      const { rows } = await b.pool.query<{ state: string }>(
        'SELECT state FROM heartbeats ORDER BY state',
      );
      expect(rows.map((row) => row.state)).toEqual(['done', 'failed']);
    } finally {
      releaseB.resolve();
      await a.close();
      await b.close();
    }
  }, 120_000);
});
