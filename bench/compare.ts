/**
 * `npm run bench:compare -- --against DIR [--targets wake,agent]`: this
 * checkout against another one (DIR, with its own node_modules), both up at
 * once and loaded in short alternating slices (ABBA order), so a change of a
 * few percent shows through the drift of a shared machine that separate runs
 * do not survive. Prints the median server CPU per response, req/s and p99
 * latency of each side, and B's median per-slice ratio to A with its interquartile range.
 * The targets (their bodies, hooks and settings) come from this checkout for both sides; each
 * side's server, from engine/ to bench/server.ts, from its own. A slice counts a side's CPU
 * during its load only, or with `--drain S` also while it finishes the agent runs and heartbeat
 * events its load left queued (SQLite, runtime on): what an accepted request costs with its run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startBenchAgent } from './agent-server.ts';
import { drainBacklog } from './backlog.ts';
import type { ServerProcess } from './child.ts';
import { measure, type LoadSettings } from './load.ts';
import { readOptions } from './options.ts';
import { median, quartiles } from './stats.ts';
import { allTargets, type ServerSpec, type Target } from './targets.ts';
import { serverSpec } from './target-spec.ts';

type Side = {
  label: string;
  server: ServerProcess;
  /** The data directory to drain after each slice; undefined: no drain. */
  drainDir: string | undefined;
  cpu: number[];
  rate: number[];
  p99: number[];
};
type Starter = (spec: ServerSpec) => Promise<ServerProcess>;

const USAGE = `npm run bench:compare -- --against DIR [options]

  --against DIR      the other checkout (with its own node_modules), loaded as side B; the
                     targets and their settings are this checkout's, the server code each side's
  --targets LIST     comma-separated bench targets (default wake; see npm run bench -- --help)
  --cycles N         ABBA cycles of one slice per side each (default 6)
  --slice S          seconds per slice (default 2)
  --connections N    autocannon connections (default 32)
  --drain S          after each slice, wait up to S seconds for that side to finish the agent
                     runs and heartbeat events its load left queued and count their CPU too
                     (SQLite targets with the runtime on; default 0: the load's CPU only)`;

const { values } = parseArgs({
  options: {
    against: { type: 'string' },
    targets: { type: 'string', default: 'wake' },
    cycles: { type: 'string', default: '6' },
    slice: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    drain: { type: 'string', default: '0' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (!values.against) {
  console.error(`usage: ${USAGE}`);
  process.exit(2);
}
const otherDir = path.resolve(values.against);
const cycles = Number(values.cycles);
const drainSeconds = Number(values.drain);
const load: LoadSettings = {
  connections: Number(values.connections),
  durationSeconds: Number(values.slice),
  warmupSeconds: 0,
  pipelining: 1,
};

async function starterFrom(dir: string): Promise<Starter> {
  const child = (await import(path.join(dir, 'bench', 'child.ts'))) as {
    startServerProcess: Starter;
  };
  return (spec) => child.startServerProcess(spec);
}

/**
 * One slice of a side's load: its CPU per response over the slice. Where the runs lag behind
 * acceptance (agent runs queued in a session), that counts the runs done during the slice, not
 * the runs of its requests, and favours the side that accepts faster: read its req/s then.
 */
async function slice(side: Side, target: Target): Promise<void> {
  const before = await side.server.sample();
  const result = await measure([side.server.url], target, load, 0);
  if (side.drainDir) {
    const drain = await drainBacklog(side.drainDir, drainSeconds);
    if (drain.remaining.runs + drain.remaining.events > 0)
      console.warn(`  ${side.label}: backlog not finished within ${drainSeconds} s`);
  }
  const after = await side.server.sample();
  const micros =
    after.userMicros -
    before.userMicros +
    after.systemMicros -
    before.systemMicros +
    Math.max(0, after.childMicros - before.childMicros);
  side.cpu.push(micros / Math.max(1, result.responses));
  side.rate.push(result.reqPerSec);
  side.p99.push(result.p99Ms);
}

async function compareTarget(target: Target, starters: [Starter, Starter], agentUrl: string) {
  const dirs: string[] = [];
  const sides: Side[] = [];
  try {
    for (const [i, start] of starters.entries()) {
      const dir = mkdtempSync(path.join(tmpdir(), `hookgate-compare-${target.key}-`));
      dirs.push(dir);
      const spec = serverSpec(
        target,
        { ...readOptions([], {}), ...load, agentUrl },
        dir,
        undefined,
      );
      const drains =
        drainSeconds > 0 &&
        spec.kind === 'hookgate' &&
        spec.runtime &&
        spec.postgresUrl === undefined &&
        !spec.memoryStore;
      sides.push({
        label: i === 0 ? 'A (this checkout)' : `B (${otherDir})`,
        server: await start(spec),
        drainDir: drains ? dir : undefined,
        cpu: [],
        rate: [],
        p99: [],
      });
    }
    const [a, b] = sides as [Side, Side];
    await measure([a.server.url], target, { ...load, durationSeconds: 1 }, 0);
    await measure([b.server.url], target, { ...load, durationSeconds: 1 }, 0);
    for (const side of sides) if (side.drainDir) await drainBacklog(side.drainDir, drainSeconds);
    for (let cycle = 0; cycle < cycles; cycle++) {
      const order = cycle % 2 === 0 ? [a, b] : [b, a];
      for (const side of order) await slice(side, target);
    }
    console.log(`\n${target.label}`);
    for (const side of sides) {
      console.log(
        `  ${side.label}: ${median(side.cpu).toFixed(1)} µs CPU/response${side.drainDir ? ' with its backlog' : ''}, ${median(side.rate).toFixed(0)} req/s, p99 ${median(side.p99).toFixed(2)} ms (medians of ${cycles} slices)`,
      );
    }
    const cpuRatios = b.cpu.map((cpu, i) => cpu / (a.cpu[i] ?? cpu));
    const rateRatios = b.rate.map((rate, i) => rate / (a.rate[i] ?? rate));
    const [cq1, cq3] = quartiles(cpuRatios);
    const [rq1, rq3] = quartiles(rateRatios);
    console.log(
      `  B / A: CPU per response ${median(cpuRatios).toFixed(3)} (IQR ${cq1.toFixed(3)}-${cq3.toFixed(3)}), req/s ${median(rateRatios).toFixed(3)} (IQR ${rq1.toFixed(3)}-${rq3.toFixed(3)})`,
    );
  } finally {
    await Promise.all(sides.map((side) => side.server.kill()));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

const agent = await startBenchAgent();
try {
  const starters: [Starter, Starter] = [
    await starterFrom(path.resolve(import.meta.dirname, '..')),
    await starterFrom(otherDir),
  ];
  const wanted = values.targets.split(',');
  for (const target of allTargets([0]).filter((t) => wanted.includes(t.key) && t.hookgate)) {
    await compareTarget(target, starters, agent.url);
  }
} finally {
  await agent.stop();
}
