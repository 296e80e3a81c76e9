/**
 * One instance of hookgate's heartbeat on a shared PostgreSQL database, as
 * the runtime wires it (runtime.ts): its own pool and store, the
 * leadership loop, whose gain recovers what a previous leader's heartbeats
 * left (never this instance's own), and the heartbeat of the main session
 * (asked for, never scheduled) running only while it leads. For tests of
 * what happens when the lead moves.
 */
import type pg from 'pg';
import type { ChannelAdapter } from '../../engine/delivery/adapter.ts';
import pino from 'pino';
import { createHeartbeat, type Heartbeat } from '../../engine/runtime/heartbeat.ts';
import { type LeadershipLoop, startLeadership } from '../../engine/runtime/leadership-loop.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from '../../engine/runtime/prompt-budget.ts';
import type { Runner, RunRequest } from '../../engine/runtime/runners/runner.ts';
import { closePool, openPool } from '../../engine/store/postgres/pool.ts';
import {
  PostgresRuntimeStore,
  type PostgresRuntimeOptions,
} from '../../engine/store/postgres/runtime-store.ts';

export const MAIN = 'main';

export type LeadingHeartbeat<S extends PostgresRuntimeStore> = {
  pool: pg.Pool;
  store: S;
  loop: LeadershipLoop;
  heartbeat: Heartbeat;
  /** Requests for a heartbeat now handed to the leader while this one did not lead. */
  forwarded: string[];
  close(): Promise<void>;
};

/** A runner noting each turn's message under `name`; answers once `hold` settles. */
export function notingRunner(turns: string[], name: string, hold: Promise<void>): Runner {
  return {
    async run(request: RunRequest) {
      turns.push(`${name}: ${request.message}`);
      await hold;
      return { status: 'ok', reply: `${name} answered` };
    },
  };
}

/** Start an instance named `owner` with leases of `leaseMs`, its lead checked every 100 ms. */
export async function leadingHeartbeat<
  S extends PostgresRuntimeStore = PostgresRuntimeStore,
>(options: {
  url: string;
  owner: string;
  leaseMs: number;
  poolSize: number;
  runner: Runner;
  makeStore?: (pool: pg.Pool, options: PostgresRuntimeOptions) => S;
  /** The channels replies are delivered on (none by default). */
  adapters?: ReadonlyMap<string, ChannelAdapter>;
}): Promise<LeadingHeartbeat<S>> {
  const logger = pino({ level: 'silent' });
  const pool = openPool({ url: options.url, poolSize: options.poolSize });
  const storeOptions = { owner: options.owner, leaseMs: options.leaseMs };
  const store = (options.makeStore?.(pool, storeOptions) ??
    new PostgresRuntimeStore(pool, storeOptions)) as S;
  const controller = new AbortController();
  let loop: LeadershipLoop | undefined;
  const forwarded: string[] = [];
  const runner = options.runner;
  const heartbeat = createHeartbeat({
    store,
    agent: () => ({ id: 'main', runner, workspace: '/tmp', model: undefined, timeoutSeconds: 30 }),
    adapters: options.adapters ?? new Map(),
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
      leaseMs: options.leaseMs,
    },
    logger,
    signal: controller.signal,
    leading: () => loop?.leading() ?? false,
    forward: (reason) => forwarded.push(reason),
  });
  loop = await startLeadership({
    leadership: store.leadership,
    leaseMs: options.leaseMs,
    everyMs: 100,
    gained: async () => {
      await store.recoverHeartbeats(await heartbeat.ownRecords());
    },
    logger,
  });
  const started = loop;
  return {
    pool,
    store,
    loop: started,
    heartbeat,
    forwarded,
    async close() {
      started.stop();
      controller.abort();
      await heartbeat.stop();
      await closePool(pool);
    },
  };
}
