/**
 * `npm run bench`: load-test hookgate against a raw node:http baseline.
 * Each server runs in its own child process (one core for it, one for the
 * autocannon load generator in this process); each hookgate target gets a
 * fresh data directory with the real SQLite store and the runtime on, as
 * `hookgate serve` runs (its agent runner is the bench's own agent, which
 * answers at once), unless a target or --runtime-off says otherwise.
 * The PostgreSQL targets get a fresh database on a throwaway PostgreSQL
 * server the bench starts (and always stops), shared by their instances.
 * After the load the servers are SIGKILLed and the store is counted against
 * the 2xx answers.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { createHistogram } from 'node:perf_hooks';
import path from 'node:path';
import { startBenchAgent } from './agent-server.ts';
import { drainBacklog } from './backlog.ts';
import { type ServerProcess, startServerProcess } from './child.ts';
import { stageLines } from './profile-stages.ts';
import { median } from './stats.ts';
import type { ServerSample } from './server.ts';
import { type LoadResult, measure, mergeSlices, warmUp } from './load.ts';
import { type BenchOptions, readOptions, USAGE } from './options.ts';
import {
  aimLines,
  referenceLines,
  type BacklogCharge,
  clean,
  durability,
  driftLine,
  markdownTable,
  type Row,
  type RunCosts,
  targetBlock,
} from './report.ts';
import { backgroundLoad, filesystemName } from './machine.ts';
import { type BenchPostgres, startBenchPostgres } from './postgres-server.ts';
import {
  countLines,
  countPostgresStore,
  countReferenceRows,
  countStoredActions,
} from './store-check.ts';
import { AIMS, allTargets, BASELINE_TARGET, BODY_BYTES, type Target } from './targets.ts';
import { describeTarget, LOG_FILE, type RunOptions, runtimeOn, serverSpec } from './target-spec.ts';

/** The counters of several servers added up. */
function sampleAll(servers: readonly ServerProcess[]): Promise<ServerSample> {
  return Promise.all(servers.map((server) => server.sample())).then((samples) =>
    samples.reduce((sum, one) => ({
      userMicros: sum.userMicros + one.userMicros,
      systemMicros: sum.systemMicros + one.systemMicros,
      childMicros: sum.childMicros + one.childMicros,
      commits: sum.commits + one.commits,
      commitMicros: sum.commitMicros + one.commitMicros,
      lifecycleCommits: sum.lifecycleCommits + one.lifecycleCommits,
      lifecycleCommitMicros: sum.lifecycleCommitMicros + one.lifecycleCommitMicros,
      heapUsed: sum.heapUsed + one.heapUsed,
      external: sum.external + one.external,
    })),
  );
}

/** Start the target's server processes, one after the other (each within its start timeout). */
async function startServers(
  target: Target,
  options: RunOptions,
  dataDir: string | undefined,
  postgresUrl: string | undefined,
  servers: ServerProcess[],
): Promise<void> {
  const instances = target.hookgate?.postgres?.instances ?? 1;
  for (let i = 1; i <= instances; i++) {
    // Instances sharing a database are separate hosts in production: a data dir each.
    const instanceDir =
      dataDir && target.hookgate?.postgres ? path.join(dataDir, `instance-${i}`) : dataDir;
    if (instanceDir) mkdirSync(instanceDir, { recursive: true });
    const spec = serverSpec(target, options, instanceDir, postgresUrl);
    servers.push(await startServerProcess(spec, profileDir(options)));
  }
}

function costsOf(
  before: ServerSample,
  after: ServerSample,
  clientCpu: NodeJS.CpuUsage,
  wallMicros: number,
  responses: number,
): RunCosts {
  const user = after.userMicros - before.userMicros;
  const system = after.systemMicros - before.systemMicros;
  // A child that was restarted in between would count negative: count 0 then.
  const child = Math.max(0, after.childMicros - before.childMicros);
  const commits = after.commits - before.commits;
  const commitMicros = after.commitMicros - before.commitMicros;
  const lifecycleCommits = after.lifecycleCommits - before.lifecycleCommits;
  const lifecycleMicros = after.lifecycleCommitMicros - before.lifecycleCommitMicros;
  const perResponse = (micros: number) => (responses ? micros / responses : 0);
  return {
    serverCpuShare: (user + system + child) / wallMicros,
    serverMicrosPerResponse: perResponse(user + system + child),
    serverSystemMicrosPerResponse: perResponse(system),
    childMicrosPerResponse: perResponse(child),
    clientCpuShare: (clientCpu.user + clientCpu.system) / wallMicros,
    commits,
    commitShare: (commitMicros + lifecycleMicros) / wallMicros,
    commitAvgMs: commits ? commitMicros / commits / 1000 : 0,
    lifecycleCommits,
    lifecycleCommitAvgMs: lifecycleCommits ? lifecycleMicros / lifecycleCommits / 1000 : 0,
  };
}

const NO_SAMPLE: ServerSample = {
  userMicros: 0,
  systemMicros: 0,
  childMicros: 0,
  commits: 0,
  commitMicros: 0,
  lifecycleCommits: 0,
  lifecycleCommitMicros: 0,
  heapUsed: 0,
  external: 0,
};

function addDelta(sum: ServerSample, before: ServerSample, after: ServerSample): ServerSample {
  return {
    userMicros: sum.userMicros + after.userMicros - before.userMicros,
    systemMicros: sum.systemMicros + after.systemMicros - before.systemMicros,
    childMicros: sum.childMicros + Math.max(0, after.childMicros - before.childMicros),
    commits: sum.commits + after.commits - before.commits,
    commitMicros: sum.commitMicros + after.commitMicros - before.commitMicros,
    lifecycleCommits: sum.lifecycleCommits + after.lifecycleCommits - before.lifecycleCommits,
    lifecycleCommitMicros:
      sum.lifecycleCommitMicros + after.lifecycleCommitMicros - before.lifecycleCommitMicros,
    heapUsed: after.heapUsed,
    external: after.external,
  };
}

type TargetRun = {
  load: LoadResult;
  /** How many times the measured load stopped (once per slice). */
  stops: number;
  costs: RunCosts;
  postgresMicros: number;
  /** Medians of the per-slice ratios to the paired baseline slices. */
  pairedRatio?: number;
  pairedCpuRatio?: number;
  /** The paired baseline's server CPU per response, median of its slices. */
  baselineMicros?: number;
  /** The server counters over every slice (each from the start of its baseline slice). */
  used: ServerSample;
};

/**
 * The measured load of one target: one run, or (with a pairing baseline server) slices, each
 * right after an equal slice of the baseline, so both see the machine in the same state.
 */
async function measureTarget(
  urls: readonly string[],
  target: Target,
  options: RunOptions,
  warm2xx: number,
  servers: readonly ServerProcess[],
  database: BenchPostgres | undefined,
  pairing: ServerProcess | undefined,
): Promise<TargetRun> {
  const slices = pairing ? options.slices : 1;
  const slice = { ...options, durationSeconds: options.durationSeconds / slices };
  const histogram = createHistogram();
  const parts: LoadResult[] = [];
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  const baseMicros: number[] = [];
  let used = NO_SAMPLE;
  let client = { user: 0, system: 0 };
  let wallMicros = 0;
  let postgresMicros = 0;
  for (let i = 0; i < slices; i++) {
    // The target's counters start before its baseline slice: work it left running from its
    // last slice (queued runs, heartbeats, the transform process) is its cost, not free.
    const before = await sampleAll(servers);
    const postgresBefore = database?.cpuMicros() ?? 0;
    let base: { reqPerSec: number; micros: number } | undefined;
    if (pairing) {
      const baseBefore = await pairing.sample();
      const load = await measure([pairing.url], BASELINE_TARGET, slice, 0);
      const baseAfter = await pairing.sample();
      const micros = costsOf(baseBefore, baseAfter, { user: 0, system: 0 }, 1, load.responses);
      base = { reqPerSec: load.reqPerSec, micros: micros.serverMicrosPerResponse };
    }
    const clientBefore = process.cpuUsage();
    // The shares of a core are over the target's own slices: the server is all but idle in its
    // baseline slice, and the load generator's CPU is counted in its own slices only.
    const startedAt = performance.now();
    const load = await measure(urls, target, slice, 0, histogram);
    wallMicros += (performance.now() - startedAt) * 1000;
    const clientCpu = process.cpuUsage(clientBefore);
    client = { user: client.user + clientCpu.user, system: client.system + clientCpu.system };
    const after = await sampleAll(servers);
    postgresMicros += (database?.cpuMicros() ?? 0) - postgresBefore;
    used = addDelta(used, before, after);
    parts.push(load);
    if (base) {
      const own = costsOf(before, after, clientCpu, 1, load.responses);
      ratios.push(load.reqPerSec / base.reqPerSec);
      cpuRatios.push(base.micros / own.serverMicrosPerResponse);
      baseMicros.push(base.micros);
    }
  }
  const load = mergeSlices(parts, histogram, warm2xx);
  return {
    load,
    stops: slices,
    costs: costsOf(NO_SAMPLE, used, client, wallMicros, load.responses),
    postgresMicros,
    used,
    ...(ratios.length > 0 && {
      pairedRatio: median(ratios),
      pairedCpuRatio: median(cpuRatios),
      baselineMicros: median(baseMicros),
    }),
  };
}

/**
 * Wait for the servers to finish what the load left queued and charge its CPU to the target:
 * its CPU per response with that backlog, and the ratio to the baseline's.
 */
async function chargeBacklog(
  dataDir: string,
  servers: readonly ServerProcess[],
  run: TargetRun,
  baselineMicros: number | undefined,
  limitSeconds: number,
): Promise<BacklogCharge> {
  const before = await sampleAll(servers);
  const drain = await drainBacklog(dataDir, limitSeconds);
  const after = await sampleAll(servers);
  const total = addDelta(run.used, before, after);
  const micros = costsOf(NO_SAMPLE, total, { user: 0, system: 0 }, 1, run.load.responses);
  const perResponse = micros.serverMicrosPerResponse;
  return {
    drain,
    microsPerResponse: perResponse,
    commits: {
      count: after.lifecycleCommits - before.lifecycleCommits,
      micros: after.lifecycleCommitMicros - before.lifecycleCommitMicros,
    },
    ...(baselineMicros !== undefined &&
      perResponse > 0 && { cpuRatio: baselineMicros / perResponse }),
  };
}

/** Run one target end to end: server up, warm-up, measured run, kill, checks. */
async function benchTarget(
  target: Target,
  options: RunOptions,
  baseline: Row | undefined,
  postgres: BenchPostgres | undefined,
  pairing: ServerProcess | undefined,
): Promise<Row> {
  const dataDir =
    target.hookgate || target.reference
      ? mkdtempSync(path.join(options.dataRoot, `hookgate-bench-${target.key}-`))
      : undefined;
  const servers: ServerProcess[] = [];
  try {
    const database = target.hookgate?.postgres ? postgres : undefined;
    if (target.hookgate?.postgres && !database) {
      throw new Error('a PostgreSQL target without the PostgreSQL server');
    }
    const postgresUrl = await database?.createDatabase();
    await startServers(target, options, dataDir, postgresUrl, servers);
    const urls = servers.map((server) => server.url);
    const warm2xx = await warmUp(urls, target, options);
    // Only a SQLite store can be read beside its server here; without the runtime nothing runs.
    const drains =
      target.hookgate &&
      dataDir &&
      !database &&
      !target.hookgate?.memoryStore &&
      runtimeOn(target, options) &&
      options.drainSeconds > 0;
    // The warm-up's runs are finished first: the backlog charged later is the measured load's.
    if (drains) {
      const warm = await drainBacklog(dataDir, options.drainSeconds);
      if (warm.remaining.runs + warm.remaining.events > 0)
        console.log(
          `  warm-up backlog not finished in ${options.drainSeconds} s: the slices start with it queued`,
        );
    }
    const paired =
      pairing && (target.hookgate || target.reference) && options.slices > 1 ? pairing : undefined;
    const run = await measureTarget(urls, target, options, warm2xx, servers, database, paired);
    const { load, costs, postgresMicros } = run;
    const backlog = drains
      ? await chargeBacklog(
          dataDir,
          servers,
          run,
          run.baselineMicros ?? baseline?.costs.serverMicrosPerResponse,
          options.drainSeconds,
        )
      : undefined;
    // All at once: instances that die together leave the database only what they committed.
    await Promise.all(
      servers.map((server) => (profileDir(options) ? server.stop() : server.kill())),
    );
    const row: Row = {
      target,
      load,
      ratio: run.pairedRatio ?? (baseline ? load.reqPerSec / baseline.load.reqPerSec : undefined),
      costs,
      cpuRatio:
        run.pairedCpuRatio ??
        (baseline
          ? baseline.costs.serverMicrosPerResponse / costs.serverMicrosPerResponse
          : undefined),
      ...(run.pairedRatio !== undefined && { pairedSlices: options.slices }),
      ...(backlog && { backlog }),
      // Each connection has at most `pipelining` requests unanswered when the warm-up or a slice
      // of the run stops.
      maxInFlight: (run.stops + 1) * options.connections * options.pipelining + load.errors,
      instances: servers.length,
    };
    if (postgresUrl !== undefined) {
      const counts = await countPostgresStore(postgresUrl);
      row.stored = counts.actions;
      row.postgresCommits = counts.commits;
      if (load.responses) row.postgresMicrosPerResponse = postgresMicros / load.responses;
    } else if (dataDir && target.reference) {
      row.stored = countReferenceRows(dataDir);
    } else if (dataDir && !target.hookgate?.memoryStore) {
      row.stored = countStoredActions(dataDir);
    }
    if (dataDir && target.hookgate?.logToFile) {
      row.logLines = countLines(path.join(dataDir, LOG_FILE));
    }
    if (dataDir && options.keep) console.log(`  data kept in ${dataDir}`);
    if (options.cpuProfDir) console.log(`  CPU profile(s) written to ${options.cpuProfDir}`);
    if (options.profile && target.hookgate) printStages(servers, options);
    return row;
  } finally {
    await Promise.all(servers.map((server) => server.kill()));
    if (dataDir && !options.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Where profiles go: --cpu-prof's directory, else a temporary one when --profile asks. */
function profileDir(options: RunOptions): string | null {
  return options.cpuProfDir ?? options.profileTemp ?? null;
}

/** Where the first server's main thread spent its time, by part of the request path. */
function printStages(servers: readonly ServerProcess[], options: RunOptions): void {
  const dir = profileDir(options);
  const first = servers[0];
  if (!dir || !first) return;
  // The main thread's profile: CPU.<date>.<time>.<pid>.0.<n>.cpuprofile.
  const file = readdirSync(dir).find((name) => name.includes(`.${first.pid}.0.`));
  if (!file) return;
  console.log(
    "  main thread's busy time by part of the request path (waits inside synchronous calls, " +
      "such as the COMMIT's fsync, count as busy):",
  );
  for (const line of stageLines(path.join(dir, file))) console.log(line);
}

function selectTargets(options: BenchOptions): Target[] {
  const all = allTargets(options.commitDelays);
  if (!options.targets) return all;
  const known = new Set(all.map((t) => t.key));
  const unknown = options.targets.filter((key) => !known.has(key));
  if (unknown.length) throw new Error(`unknown target(s): ${unknown.join(', ')}`);
  return all.filter((t) => options.targets?.includes(t.key));
}

/**
 * The PostgreSQL server when a selected target needs one, and the targets that can run: without
 * PostgreSQL its targets are left out with the reason printed, and the others run.
 */
async function preparePostgres(
  targets: readonly Target[],
): Promise<{ postgres: BenchPostgres | undefined; runnable: Target[] }> {
  if (!targets.some((target) => target.hookgate?.postgres)) {
    return { postgres: undefined, runnable: [...targets] };
  }
  const started = await startBenchPostgres();
  if ('skipped' in started) {
    console.log(`PostgreSQL targets skipped: ${started.skipped}`);
    return {
      postgres: undefined,
      runnable: targets.filter((target) => !target.hookgate?.postgres),
    };
  }
  return { postgres: started, runnable: [...targets] };
}

/** Stop the PostgreSQL server on Ctrl-C or SIGTERM too (its postmaster is not our child). */
function stopOnSignal(stop: () => Promise<void>): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    void stop().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

function printHeader(options: BenchOptions, targets: readonly Target[]): void {
  const cpu = cpus();
  // A sliced target's measured time is doubled by its baseline slices.
  const paired = options.slices > 1 ? 2 : 1;
  const perTarget = options.warmupSeconds + options.durationSeconds * paired;
  console.log(`hookgate bench: Node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}`);
  console.log(
    `autocannon: ${options.connections} connections, pipelining ${options.pipelining}, ` +
      `${options.warmupSeconds} s warm-up + ${options.durationSeconds} s measured per target ` +
      (options.slices > 1
        ? `in ${options.slices} slices, each after an equal slice of the baseline, `
        : '') +
      `(~${targets.length * perTarget} s in all, plus the backlogs drained); POST ${BODY_BYTES}-byte JSON bodies to 127.0.0.1`,
  );
  console.log(
    'servers run in a child process each (the load generator has the other core; the transform ' +
      "target's sandbox process shares the cores too); " +
      `hookgate: runtime ${options.runtime ? 'on, as hookgate serve runs,' : 'off (ingress only)'} except where noted, ` +
      'real SQLite store (WAL, synchronous=FULL, group commit) in a fresh dir on ' +
      `${filesystemName(options.dataRoot)} (${options.dataRoot}); ` +
      (options.drainSeconds > 0
        ? `after the warm-up and after the load the server finishes the runs they left queued (up to ${options.drainSeconds} s; SQLite with the runtime on), then `
        : 'after the load ') +
      `the server is ${options.cpuProfDir ? 'asked to exit (CPU profiling)' : 'SIGKILLed'} ` +
      'and its store counted',
  );
  if (targets.some((target) => target.hookgate?.postgres)) {
    console.log(
      'PostgreSQL targets: a throwaway PostgreSQL server started by the bench on 127.0.0.1, on ' +
        `the same cores and ${filesystemName(tmpdir())} (${tmpdir()}); its CPU is sampled from /proc`,
    );
  }
}

async function main(): Promise<number> {
  const options = readOptions(process.argv.slice(2), process.env);
  if (options.help) {
    console.log(USAGE);
    return 0;
  }
  const { postgres, runnable: targets } = await preparePostgres(selectTargets(options));
  const unwatch = postgres ? stopOnSignal(postgres.stop) : () => undefined;
  const agent = options.runtime ? await startBenchAgent() : undefined;
  const profileTemp =
    options.profile && !options.cpuProfDir
      ? mkdtempSync(path.join(tmpdir(), 'hookgate-bench-profile-'))
      : undefined;
  try {
    return await runTargets(
      {
        ...options,
        ...(agent && { agentUrl: agent.url }),
        ...(profileTemp && { profileTemp }),
      },
      targets,
      postgres,
    );
  } finally {
    unwatch();
    await agent?.stop();
    if (profileTemp) rmSync(profileTemp, { recursive: true, force: true });
    await postgres?.stop();
  }
}

async function runTargets(
  options: RunOptions,
  targets: readonly Target[],
  postgres: BenchPostgres | undefined,
): Promise<number> {
  printHeader(options, targets);
  const background = await backgroundLoad();
  const busy = background > 0.1 ? ': other work is running, numbers will be lower and noisier' : '';
  console.log(
    `CPU busy before the run (1 s sample, all cores): ${(background * 100).toFixed(0)}%${busy}`,
  );
  const rows: Row[] = [];
  let baseline: Row | undefined;
  // The baseline each sliced target's slices are paired with, up for the whole run.
  const pairing =
    options.slices > 1 && targets.some((target) => target.hookgate || target.reference)
      ? await startServerProcess({ kind: 'baseline' })
      : undefined;
  // Warm (JIT) before its first slice is compared with anything.
  if (pairing) await warmUp([pairing.url], BASELINE_TARGET, options);
  try {
    for (const [i, target] of targets.entries()) {
      console.log(
        `\n[${i + 1}/${targets.length}] ${target.label} (${describeTarget(target, options)})`,
      );
      const row = await benchTarget(target, options, baseline, postgres, pairing);
      if (target.key === 'baseline') baseline = row;
      rows.push(row);
      console.log(targetBlock(row));
    }
  } finally {
    await pairing?.kill();
  }
  console.log(`\n${markdownTable(rows)}\n`);
  const drift = driftLine(rows);
  if (drift) console.log(drift);
  console.log(
    `aim: each target's fraction of the baseline's req/s (/wake ${AIMS.wake} with p99 < ` +
      `${AIMS.wakeP99Ms} ms, /agent ${AIMS.agent}, mapped hook ${AIMS.mapped}, signed GitHub ` +
      `${AIMS.signed}, transform ${AIMS.transform}, refusals ${AIMS.refusal}), every 200 durable`,
  );
  for (const line of aimLines(rows)) console.log(line);
  for (const line of referenceLines(rows)) console.log(line);
  const broken = rows.filter((row) => !clean(row) || durability(row)?.ok === false);
  for (const row of broken)
    console.log(`FAILED: ${row.target.label}: unexpected answers or lost actions`);
  return broken.length ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`bench: ${(err as Error).message}`);
    process.exitCode = 2;
  },
);
