/**
 * The kill test: three real hookgate instances share one PostgreSQL
 * database behind one address (a TCP balancer); producers send per-session
 * sequences with idempotency keys, retrying through errors with the same
 * key; one instance is SIGKILLed under load (and, in another test, the
 * database server itself). Once everything acknowledged has run, every
 * acknowledged action must be stored exactly once, each session's store
 * order and completion order must be its send order, and no two runs of one
 * session may overlap in time. Two negative controls break a guarantee in
 * the product on purpose (HOOKGATE_TEST_FAULTS) and the same checker must
 * catch it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN } from './helpers/hookgate.ts';
import { checkKillRun, type KillVerdict } from './helpers/kill-check.ts';
import {
  connectTo,
  readRunnerRecords,
  readStoredActions,
  startCluster,
  unfinished,
} from './helpers/kill-cluster.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { useProcessFixtures } from './helpers/process.ts';
import { waitFor } from './helpers/runtime.ts';
import { runProducers } from './helpers/session-producers.ts';
import { startTcpBalancer } from './helpers/tcp-balancer.ts';

const skip = skipPostgres();
const INSTANCES = 3;
// Well over the database outage the kill causes (2-6 s here, with two CPU hogs beside the
// suite): a turn still running when three quarters of its lease have passed without a renewal
// is stopped and runs again later, and one whose instance is starved of CPU meanwhile may still
// finish beside its takeover (README, Leases); these cases are about acknowledged actions, not
// that limit. At 3 s a loaded run's outage of 2.1 s once gave an overlap, at 6 s a run with the
// whole suite and two CPU hogs beside it failed once (which count, it did not say then).
const LEASE_SECONDS = 12;
const DRAIN_TIMEOUT_MS = 90_000;
const KILL_AT_SHARE = 0.4;
/** Acknowledgements the kill waits for at least, however slow the machine. */
const MIN_ACKED = 10;

type Scenario = {
  /** What is SIGKILLed under load. */
  kill: 'instance' | 'database';
  /** The load's bound in time (the request count is the other: a slow machine sends fewer). */
  loadMs: number;
  /** Requests sent at most (the work left to drain is bounded whatever the machine's speed). */
  requests: number;
  producers: number;
  sessions: number;
  faults?: string;
  /** Runs wait until the load is over, as slow agents would: every session gets a backlog. */
  holdRuns?: boolean;
  /** Drop the one-running-action-per-session index (the second guard behind the head rule). */
  dropOneRunningIndex?: boolean;
};

type Outcome = {
  verdict: KillVerdict;
  states: Record<string, number>;
  unexpected: string[];
  /** Acknowledged before the kill (the rest after it). */
  ackedAtKill: number;
  /** Requests sent again after an error (the kill hit requests in flight). */
  retries: number;
};

describe.skipIf(skip)('three instances on PostgreSQL, killed under load', () => {
  const temp = useProcessFixtures();
  let server: PostgresServer;

  beforeAll(async () => {
    server = await startPostgres();
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
  });

  async function run(name: string, scenario: Scenario): Promise<Outcome> {
    const url = await server.createDatabase();
    const dir = temp();
    const hold = path.join(dir, 'release');
    const cluster = await startCluster({
      dir,
      url,
      token: TOKEN,
      count: INSTANCES,
      leaseSeconds: LEASE_SECONDS,
      concurrency: 4,
      env: scenario.faults ? { HOOKGATE_TEST_FAULTS: scenario.faults } : {},
      ...(scenario.holdRuns && { holdRunsUntil: hold }),
    });
    if (scenario.dropOneRunningIndex) {
      const client = await connectTo(url);
      await client.query('DROP INDEX actions_one_running');
      await client.end();
    }
    const balancer = await startTcpBalancer(cluster.instances.map((instance) => instance.port));
    // The kill comes once this share of the requests was acknowledged, or this share of the
    // load's time passed on a machine too slow for that (then not before MIN_ACKED were
    // acknowledged, so there are acknowledgements on both sides of it): mid-load either way.
    const killAt = Math.floor(scenario.requests * KILL_AT_SHARE);
    let timeUp = false;
    let killed: Promise<void> | undefined;
    let ackedAtKill = 0;
    let outageMs = 0;
    let ackedSoFar = 0;
    const kill = () => {
      if (killed) return;
      ackedAtKill = ackedSoFar;
      killed = (async () => {
        if (scenario.kill === 'instance') {
          cluster.instances[0]?.child.kill('SIGKILL');
          return;
        }
        const crashed = Date.now();
        server.crash();
        // Back as soon as it can be: the producers and instances retry meanwhile.
        await server.restart();
        outageMs = Date.now() - crashed;
      })();
    };
    const killTimer = setTimeout(() => {
      timeUp = true;
      if (ackedSoFar >= MIN_ACKED) kill();
    }, scenario.loadMs * KILL_AT_SHARE);
    const load = await runProducers({
      url: balancer.url,
      token: TOKEN,
      producers: scenario.producers,
      sessions: scenario.sessions,
      durationMs: scenario.loadMs,
      maxRequests: scenario.requests,
      giveUpMs: scenario.loadMs + 60_000,
      onAck: (count) => {
        ackedSoFar = count;
        if (count === killAt || (timeUp && count >= MIN_ACKED)) kill();
      },
    });
    clearTimeout(killTimer);
    writeFileSync(hold, '');
    if (!killed) throw new Error('the load ended before the kill');
    await killed;

    const drainStart = Date.now();
    // The database may still be recovering: the probe's own errors only mean "not yet".
    const client = await waitFor('a connection to the database', () => connectTo(url), 60_000);
    try {
      await waitFor(
        'every action to finish',
        async () => (await unfinished(client)) === 0,
        DRAIN_TIMEOUT_MS,
        100,
      );
      const drainMs = Date.now() - drainStart;
      const stored = await readStoredActions(client);
      const states: Record<string, number> = {};
      for (const row of stored) states[row.state] = (states[row.state] ?? 0) + 1;
      const records = readRunnerRecords(cluster.recordFile);
      const verdict = checkKillRun({ acked: load.acked, stored, records });
      const latencies = [...load.latenciesMs].sort((a, b) => a - b);
      const outage = outageMs ? `, database back after ${(outageMs / 1000).toFixed(1)} s` : '';
      const pct = (p: number) => latencies[Math.floor((latencies.length - 1) * p)] ?? 0;
      console.log(
        `${name}: acked ${verdict.acked} (${ackedAtKill} before the kill${outage}) in ${(load.elapsedMs / 1000).toFixed(1)} s ` +
          `(${Math.round(verdict.acked / (load.elapsedMs / 1000))} req/s, p50 ${pct(0.5)} ms, ` +
          `p99 ${pct(0.99)} ms); connection errors ${load.connectionErrors}, 5xx ` +
          `${load.serverErrors}, retries ${load.retries}, acked after retry ` +
          `${load.ackedAfterRetry}, balancer resets ${balancer.resets()}; lost ${verdict.lost}, ` +
          `misanswered ${verdict.misanswered}, ` +
          `duplicates ${verdict.duplicates}, store-order ${verdict.storeOrderViolations}, ` +
          `completion-order ${verdict.completionOrderViolations}, overlaps ${verdict.overlaps}, ` +
          `re-executed ${verdict.reExecuted}, interrupted ${verdict.interrupted}, never ` +
          `completed ${verdict.neverCompleted}; states ${JSON.stringify(states)}; drain ` +
          `${(drainMs / 1000).toFixed(1)} s`,
      );
      return {
        verdict,
        states,
        unexpected: load.unexpected,
        ackedAtKill,
        retries: load.retries,
      };
    } finally {
      await client.end().catch(() => undefined);
      await balancer.close();
    }
  }

  function expectCorrect(outcome: Outcome): void {
    expect(outcome.unexpected).toEqual([]);
    // The kill came under load: acknowledgements on both sides of it, requests in flight hit.
    // (Counts stay low on purpose: a busy 2-core machine may serve only a few dozen a second.)
    expect(outcome.ackedAtKill).toBeGreaterThanOrEqual(MIN_ACKED);
    expect(outcome.verdict.acked - outcome.ackedAtKill).toBeGreaterThanOrEqual(10);
    expect(outcome.retries).toBeGreaterThan(0);
    // The whole verdict in the message: a failure on CI says which count broke.
    expect(outcome.verdict, JSON.stringify(outcome.verdict)).toMatchObject({
      lost: 0,
      misanswered: 0,
      duplicates: 0,
      storeOrderViolations: 0,
      completionOrderViolations: 0,
      overlaps: 0,
      neverCompleted: 0,
    });
    // Every turn succeeds: nothing may end failed or dead.
    expect(Object.keys(outcome.states), JSON.stringify(outcome.states)).toEqual(['done']);
  }

  it('SIGKILL of one instance: every acknowledged action runs once in order, none lost', async () => {
    const outcome = await run('kill instance', {
      kill: 'instance',
      loadMs: 6_000,
      requests: 600,
      producers: 24,
      sessions: 150,
    });
    expectCorrect(outcome);
  }, 180_000);

  it('SIGKILL of the PostgreSQL server: producers retry through it, nothing acknowledged is lost', async () => {
    const outcome = await run('kill database', {
      kill: 'database',
      loadMs: 6_000,
      requests: 600,
      producers: 24,
      sessions: 150,
    });
    expectCorrect(outcome);
  }, 180_000);

  it('control: answering before the commit loses acknowledged actions when an instance dies', async () => {
    const outcome = await run('control ack-before-commit', {
      kill: 'instance',
      loadMs: 3_000,
      requests: 200,
      producers: 24,
      sessions: 48,
      faults: 'ack-before-commit',
    });
    expect(outcome.verdict.lost).toBeGreaterThan(0);
  }, 180_000);

  it('control: claiming without the head rule breaks session order', async () => {
    const outcome = await run('control claim-without-head-rule', {
      kill: 'instance',
      loadMs: 3_000,
      requests: 200,
      // Few sessions and runs held until the load is over: each session's next requests wait
      // behind a running one, whatever the machine's speed, for a claim that ignores heads.
      producers: 8,
      sessions: 8,
      holdRuns: true,
      faults: 'claim-without-head-rule',
      dropOneRunningIndex: true,
    });
    expect(outcome.verdict.completionOrderViolations + outcome.verdict.overlaps).toBeGreaterThan(0);
  }, 180_000);
});
