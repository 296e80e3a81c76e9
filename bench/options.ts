/**
 * Benchmark settings from flags (`npm run bench -- --duration 5`) or
 * BENCH_* environment variables, with defaults that keep a full run (ten
 * targets; the commit-delay sweep only on request) under two minutes.
 */
import { tmpdir } from 'node:os';
import { parseArgs } from 'node:util';
import type { LoadSettings } from './load.ts';

/** Everything `npm run bench` can be told. */
export type BenchOptions = LoadSettings & {
  /** Target keys to run; null: all. */
  targets: string[] | null;
  /** Group-commit windows: the first is used by every hookgate row, the others add /wake rows. */
  commitDelays: number[];
  /** Parent directory of the per-target temporary data directories. */
  dataRoot: string;
  /** Keep the data directories (stores and log files) instead of removing them. */
  keep: boolean;
  /** Run hookgate's runtime (action worker, heartbeat) in the hookgate targets, as serve does. */
  runtime: boolean;
  /** Write V8 CPU profiles of the server processes here (they then exit instead of SIGKILL). */
  cpuProfDir: string | null;
  /** Profile every server and print where its CPU went, by part of the request path. */
  profile: boolean;
  /**
   * Slices each hookgate target's measured time is cut into, each right after a slice of the
   * baseline on a server kept up for the whole run; 1: one run, compared with the first row.
   */
  slices: number;
  /**
   * Longest wait, in seconds, for a target's server to finish the runs and heartbeat events
   * left queued when its load stopped (their CPU is charged to it); 0: no wait.
   */
  drainSeconds: number;
  help: boolean;
};

/** Usage text for --help. */
export const USAGE = `npm run bench [-- options]

  --duration S       measured seconds per target          (BENCH_DURATION, default 8)
  --warmup S         warm-up seconds per target           (BENCH_WARMUP, default 2)
  --connections N    autocannon connections               (BENCH_CONNECTIONS, default 32)
  --pipelining N     requests in flight per connection    (BENCH_PIPELINING, default 1)
  --targets LIST     comma-separated keys: baseline, durable-reference, wake, agent, mapped,
                     github-signed, transform, unauthorized, wake-log, wake-ingress, wake-memory,
                     wake-pg, wake-pg-3, wake-delay-N, baseline-again (BENCH_TARGETS, default
                     all); wake-pg and wake-pg-3 start a throwaway PostgreSQL server (skipped
                     without one); durable-reference is node:http with one durable SQLite row
                     per request and no hookgate code: what durability alone costs
  --commit-delays L  runtime.commitDelayMs values; the first applies to every hookgate
                     target, each further one adds a /wake row, e.g. 0,1,2 for the sweep
                     (BENCH_COMMIT_DELAYS, default 0)
  --data-root DIR    where temporary data dirs are made   (BENCH_DATA_ROOT, default the OS temp dir)
  --keep             keep the data dirs (stores, log file)
  --slices N         cut each hookgate target's measured seconds into N slices, each right
                     after an equal slice of the baseline (a server kept up for the run): its
                     ratios are the medians of the per-slice ratios, so the machine's drift
                     cancels out; 1 compares with the first baseline row instead
                     (BENCH_SLICES, default 4)
  --runtime-off      run the hookgate targets without the runtime (ingress only; BENCH_RUNTIME=0);
                     default on, as hookgate serve runs (action worker, heartbeat, and an
                     agent runner over HTTP that the bench answers at once), except the
                     wake-ingress row
  --profile          profile each server (--cpu-prof into a temporary directory unless given)
                     and print where its CPU went per request, by part of the request path
  --drain S          after a target's load, wait up to S seconds for its server to finish the
                     agent runs and heartbeat events left queued (SQLite targets with the
                     runtime on), and charge their CPU to it: the "with backlog" figures;
                     0 skips the wait (BENCH_DRAIN, default 180)
  --cpu-prof DIR     write a .cpuprofile of each server process (and of the transform
                     process) into DIR; servers then exit on request instead of SIGKILL
                     (BENCH_CPU_PROF); summarise one with: node bench/profile-summary.ts FILE
`;

const FLAGS = {
  duration: { type: 'string' },
  warmup: { type: 'string' },
  connections: { type: 'string' },
  pipelining: { type: 'string' },
  targets: { type: 'string' },
  'commit-delays': { type: 'string' },
  'data-root': { type: 'string' },
  keep: { type: 'boolean' },
  'runtime-off': { type: 'boolean' },
  profile: { type: 'boolean' },
  slices: { type: 'string' },
  'cpu-prof': { type: 'string' },
  drain: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function integer(name: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    throw new Error(`${name}: expected an integer >= ${min}, got "${text}"`);
  }
  return value;
}

function list(text: string | undefined): string[] | null {
  if (text === undefined || text.trim() === '') return null;
  return text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** Parse flags over environment variables over defaults; throws on a bad value. */
export function readOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const { values } = parseArgs({ args: argv, options: FLAGS, strict: true });
  const delays = list(values['commit-delays'] ?? env['BENCH_COMMIT_DELAYS']) ?? ['0'];
  return {
    durationSeconds: integer('duration', values.duration ?? env['BENCH_DURATION'], 8, 1),
    warmupSeconds: integer('warmup', values.warmup ?? env['BENCH_WARMUP'], 2, 0),
    connections: integer('connections', values.connections ?? env['BENCH_CONNECTIONS'], 32, 1),
    pipelining: integer('pipelining', values.pipelining ?? env['BENCH_PIPELINING'], 1, 1),
    targets: list(values.targets ?? env['BENCH_TARGETS']),
    commitDelays: delays.map((d) => integer('commit-delays', d, 0, 0)),
    dataRoot: values['data-root'] ?? env['BENCH_DATA_ROOT'] ?? tmpdir(),
    keep: values.keep ?? false,
    runtime: !(values['runtime-off'] ?? env['BENCH_RUNTIME'] === '0'),
    cpuProfDir: values['cpu-prof'] ?? env['BENCH_CPU_PROF'] ?? null,
    profile: values.profile ?? false,
    slices: integer('slices', values.slices ?? env['BENCH_SLICES'], 4, 1),
    drainSeconds: integer('drain', values.drain ?? env['BENCH_DRAIN'], 180, 0),
    help: values.help ?? false,
  };
}
