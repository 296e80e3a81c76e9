/**
 * `npm run bench`: load-test hookgate against a raw node:http baseline.
 * Each server runs in its own child process (one core for it, one for the
 * autocannon load generator in this process); each hookgate target gets a
 * fresh data directory with the real SQLite store and, unless a target or
 * --runtime says otherwise, no runtime (the bench measures acceptance).
 * After the load the server is SIGKILLed and its store is counted against
 * the 2xx answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { type ServerProcess, startServerProcess } from './child.ts';
import type { ServerSample } from './server.ts';
import { measure, warmUp } from './load.ts';
import { type BenchOptions, readOptions, USAGE } from './options.ts';
import {
  aimLines,
  clean,
  durability,
  driftLine,
  markdownTable,
  type Row,
  type RunCosts,
  targetBlock,
} from './report.ts';
import { backgroundLoad, filesystemName } from './machine.ts';
import { countLines, countStoredActions } from './store-check.ts';
import { allTargets, BODY_BYTES, type ServerSpec, type Target } from './targets.ts';

const LOG_FILE = 'requests.log';

function describeTarget(target: Target, options: BenchOptions): string {
  const variant = target.hookgate;
  if (!variant) return 'raw node:http: read body, JSON.parse, 200 {"ok":true}';
  const parts: string[] = [];
  if (variant.transformFiles) {
    parts.push(
      'a mapping calling a transform in the sandbox (isolated-vm in a separate transform process, ' +
        'warm context; default limits, isolate recycled every 10,000 calls)',
    );
  } else if (target.githubSecret !== undefined) {
    parts.push(
      'the github preset: X-Hub-Signature-256 verified over the raw body, delivery id and ' +
        'signed-content keys, mapping chosen by X-GitHub-Event; a fresh body and id per request',
    );
  } else if (variant.hooks) {
    parts.push('a mapping with a JSON-logic condition on a header and Handlebars templates');
  }
  parts.push(
    variant.memoryStore
      ? 'in-memory store: nothing is committed'
      : `commitDelayMs ${variant.commitDelayMs}`,
    variant.logToFile ? `log info -> ${LOG_FILE} in the data dir` : 'log silent',
    runtimeOn(target, options)
      ? 'runtime on (action worker consumes the actions; no runner configured)'
      : 'runtime off (ingress only)',
  );
  if (variant.maxFailures !== undefined) {
    parts.push(`authRateLimit.maxFailures ${variant.maxFailures} (so 401, never 429)`);
  }
  return parts.join(', ');
}

function runtimeOn(target: Target, options: BenchOptions): boolean {
  return target.hookgate?.runtime ?? options.runtime;
}

function serverSpec(
  target: Target,
  options: BenchOptions,
  dataDir: string | undefined,
): ServerSpec {
  const variant = target.hookgate;
  if (!variant || !dataDir) return { kind: 'baseline' };
  return {
    kind: 'hookgate',
    dataDir,
    commitDelayMs: variant.commitDelayMs,
    runtime: runtimeOn(target, options),
    ...(variant.logToFile && { logFile: path.join(dataDir, LOG_FILE) }),
    ...(variant.maxFailures !== undefined && { maxFailures: variant.maxFailures }),
    ...(variant.memoryStore && { memoryStore: true }),
    ...(variant.hooks && { hooks: variant.hooks }),
    ...(variant.transformFiles && { transformFiles: variant.transformFiles }),
  };
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
  const perResponse = (micros: number) => (responses ? micros / responses : 0);
  return {
    serverCpuShare: (user + system + child) / wallMicros,
    serverMicrosPerResponse: perResponse(user + system + child),
    serverSystemMicrosPerResponse: perResponse(system),
    childMicrosPerResponse: perResponse(child),
    clientCpuShare: (clientCpu.user + clientCpu.system) / wallMicros,
    commits,
    commitShare: commitMicros / wallMicros,
    commitAvgMs: commits ? commitMicros / commits / 1000 : 0,
  };
}

/** Run one target end to end: server up, warm-up, measured run, kill, checks. */
async function benchTarget(
  target: Target,
  options: BenchOptions,
  baseline: Row | undefined,
): Promise<Row> {
  const dataDir = target.hookgate
    ? mkdtempSync(path.join(options.dataRoot, `hookgate-bench-${target.key}-`))
    : undefined;
  let server: ServerProcess | undefined;
  try {
    server = await startServerProcess(serverSpec(target, options, dataDir), options.cpuProfDir);
    const warm2xx = await warmUp(server.url, target, options);
    const before = await server.sample();
    const clientBefore = process.cpuUsage();
    const startedAt = performance.now();
    const load = await measure(server.url, target, options, warm2xx);
    const wallMicros = (performance.now() - startedAt) * 1000;
    const clientCpu = process.cpuUsage(clientBefore);
    const after = await server.sample();
    const costs = costsOf(before, after, clientCpu, wallMicros, load.responses);
    if (options.cpuProfDir) await server.stop();
    else await server.kill();
    const row: Row = {
      target,
      load,
      ratio: baseline ? load.reqPerSec / baseline.load.reqPerSec : undefined,
      costs,
      cpuRatio: baseline
        ? baseline.costs.serverMicrosPerResponse / costs.serverMicrosPerResponse
        : undefined,
      // Each connection has at most `pipelining` requests unanswered when warm-up or run stops.
      maxInFlight: 2 * options.connections * options.pipelining + load.errors,
    };
    if (dataDir && !target.hookgate?.memoryStore) row.stored = countStoredActions(dataDir);
    if (dataDir && target.hookgate?.logToFile) {
      row.logLines = countLines(path.join(dataDir, LOG_FILE));
    }
    if (dataDir && options.keep) console.log(`  data kept in ${dataDir}`);
    if (options.cpuProfDir) console.log(`  CPU profile(s) written to ${options.cpuProfDir}`);
    return row;
  } finally {
    await server?.kill();
    if (dataDir && !options.keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

function selectTargets(options: BenchOptions): Target[] {
  const all = allTargets(options.commitDelays);
  if (!options.targets) return all;
  const known = new Set(all.map((t) => t.key));
  const unknown = options.targets.filter((key) => !known.has(key));
  if (unknown.length) throw new Error(`unknown target(s): ${unknown.join(', ')}`);
  return all.filter((t) => options.targets?.includes(t.key));
}

function printHeader(options: BenchOptions, targets: readonly Target[]): void {
  const cpu = cpus();
  const perTarget = options.warmupSeconds + options.durationSeconds;
  console.log(`hookgate bench: Node ${process.version}, ${cpu.length} x ${cpu[0]?.model ?? 'cpu'}`);
  console.log(
    `autocannon: ${options.connections} connections, pipelining ${options.pipelining}, ` +
      `${options.warmupSeconds} s warm-up + ${options.durationSeconds} s measured per target ` +
      `(~${targets.length * perTarget} s in all); POST ${BODY_BYTES}-byte JSON bodies to 127.0.0.1`,
  );
  console.log(
    'servers run in a child process each (the load generator has the other core; the transform ' +
      "target's sandbox process shares the cores too); " +
      `hookgate: runtime ${options.runtime ? 'on' : 'off (ingress only) except where noted'}, ` +
      'real SQLite store (WAL, synchronous=FULL, group commit) in a fresh dir on ' +
      `${filesystemName(options.dataRoot)} (${options.dataRoot}); ` +
      `after the load the server is ${options.cpuProfDir ? 'asked to exit (CPU profiling)' : 'SIGKILLed'} ` +
      'and its store counted',
  );
}

async function main(): Promise<number> {
  const options = readOptions(process.argv.slice(2), process.env);
  if (options.help) {
    console.log(USAGE);
    return 0;
  }
  const targets = selectTargets(options);
  printHeader(options, targets);
  const background = await backgroundLoad();
  const busy = background > 0.1 ? ': other work is running, numbers will be lower and noisier' : '';
  console.log(
    `CPU busy before the run (1 s sample, all cores): ${(background * 100).toFixed(0)}%${busy}`,
  );
  const rows: Row[] = [];
  let baseline: Row | undefined;
  for (const [i, target] of targets.entries()) {
    console.log(
      `\n[${i + 1}/${targets.length}] ${target.label} (${describeTarget(target, options)})`,
    );
    const row = await benchTarget(target, options, baseline);
    if (target.key === 'baseline') baseline = row;
    rows.push(row);
    console.log(targetBlock(row));
  }
  console.log(`\n${markdownTable(rows)}\n`);
  const drift = driftLine(rows);
  if (drift) console.log(drift);
  console.log(
    "aim: each target's fraction of the baseline's req/s (direct /wake and /agent 0.5, " +
      'mapped hook 0.45, transform 0.35), every 200 durable',
  );
  for (const line of aimLines(rows)) console.log(line);
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
