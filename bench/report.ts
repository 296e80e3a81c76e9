/**
 * Printing the benchmark: one block per target as it finishes, then a
 * compact markdown table and the verdict against each target's aim (a
 * fraction of the baseline's req/s with every 200 durable, and for /wake a
 * p99 bound; targets.ts AIMS).
 */
import type { Drain } from './backlog.ts';
import type { LoadResult } from './load.ts';
import type { Target } from './targets.ts';

/** Server and load-generator counters over the measured run. */
export type RunCosts = {
  /** Server CPU time (user + system, its child processes included) as a share of one core. */
  serverCpuShare: number;
  serverMicrosPerResponse: number;
  /** Of which system (kernel) time of the server process, per response. */
  serverSystemMicrosPerResponse: number;
  /** Of which the server's child processes (the transform process), per response. */
  childMicrosPerResponse: number;
  /** Load generator (this process) CPU time as a share of one core. */
  clientCpuShare: number;
  /** Acceptance COMMITs (synchronous=FULL: an fsync each). */
  commits: number;
  /** Share of the run's wall time the server's event loop spent inside a COMMIT (either kind). */
  commitShare: number;
  commitAvgMs: number;
  /** The runtime's COMMITs (synchronous=NORMAL: no fsync). */
  lifecycleCommits: number;
  lifecycleCommitAvgMs: number;
};

/** The work a target's load left queued, finished after it and charged to it. */
export type BacklogCharge = {
  drain: Drain;
  /** Server CPU per response over the slices and the drain together. */
  microsPerResponse: number;
  /** The runtime's COMMITs during the drain and the time inside them. */
  commits: { count: number; micros: number };
  /** The baseline's server CPU per response divided by `microsPerResponse`. */
  cpuRatio?: number;
};

/** Everything measured for one target. */
export type Row = {
  target: Target;
  load: LoadResult;
  /** req/s divided by the baseline's; undefined without a baseline run. */
  ratio: number | undefined;
  /** Slices the ratios are medians over (each paired with a baseline slice); absent: one run. */
  pairedSlices?: number;
  costs: RunCosts;
  /**
   * The baseline's server CPU per response divided by this target's: the req/s ratio of two
   * CPU-bound servers, far less sensitive than `ratio` to other work on the machine.
   */
  cpuRatio: number | undefined;
  /** What the load left queued (runs, heartbeat events), finished after it; SQLite with the runtime on. */
  backlog?: BacklogCharge;
  /** Requests that can be stored without their answer being counted (cut off at a stop). */
  maxInFlight: number;
  /** Rows in the store (SQLite or PostgreSQL) after the servers were killed (durable hookgate targets only). */
  stored?: number;
  logLines?: number;
  /** Server processes the load was spread over (several instances on one PostgreSQL database). */
  instances: number;
  /** The PostgreSQL server's CPU (postmaster, backends, WAL writer) per response, µs. */
  postgresMicrosPerResponse?: number;
  /** Transactions committed in the target's PostgreSQL database (warm-up, run, schema setup). */
  postgresCommits?: number;
};

const int = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const fmt = (n: number) => int.format(n);
const ms = (n: number) => n.toFixed(2);
const pct = (share: number) => `${(share * 100).toFixed(0)}%`;
const ratioText = (r: number | undefined) => (r === undefined ? 'n/a' : `${r.toFixed(2)}x`);

/** How the durability check came out for a row (undefined when the row has no SQLite store). */
export function durability(row: Row): { ok: boolean; text: string } | undefined {
  if (row.stored === undefined) return undefined;
  const { stored, load } = row;
  if (row.target.expectStatus !== 200) {
    return { ok: stored === 0, text: `rows in store ${fmt(stored)} (refusals store nothing)` };
  }
  const extra = stored - load.total2xx;
  const verdict =
    extra < 0
      ? `LOST ${fmt(-extra)}`
      : extra <= row.maxInFlight
        ? `ok, none missing (+${fmt(extra)}: in flight when warm-up or run stopped, stored but not counted)`
        : `ok, none missing, but +${fmt(extra)} is more than the ${fmt(row.maxInFlight)} that can be in flight: check`;
  return {
    ok: extra >= 0,
    text: `2xx answered (warm-up + run) ${fmt(load.total2xx)}, rows in store ${fmt(stored)} -> ${verdict}`,
  };
}

/** Whether a target got only its expected status and no socket errors. */
export function clean(row: Row): boolean {
  return row.load.unexpected === 0 && row.load.errors === 0;
}

function costLines(row: Row): string[] {
  const { costs, load } = row;
  const child =
    costs.childMicrosPerResponse > 0
      ? `, of which ${costs.childMicrosPerResponse.toFixed(1)} µs in the transform process`
      : '';
  const servers = row.instances > 1 ? `${row.instances} instances' CPU together` : 'server CPU';
  const lines = [
    `  ${servers} ${pct(costs.serverCpuShare)} of one core = ${costs.serverMicrosPerResponse.toFixed(1)} µs per response ` +
      `(${costs.serverSystemMicrosPerResponse.toFixed(1)} µs kernel${child}); load generator CPU ${pct(costs.clientCpuShare)}`,
  ];
  if (row.postgresMicrosPerResponse !== undefined) {
    lines.push(
      `  PostgreSQL server CPU ${row.postgresMicrosPerResponse.toFixed(1)} µs per response ` +
        '(postmaster, backends, WAL writer, checkpointer; same cores)',
    );
  }
  if (row.postgresCommits && row.stored !== undefined) {
    lines.push(
      `  PostgreSQL: ${fmt(row.postgresCommits)} transactions committed over warm-up and run ` +
        `(schema setup included), ${(row.stored / row.postgresCommits).toFixed(1)} actions each`,
    );
  }
  if (costs.commits > 0) {
    const lifecycle =
      costs.lifecycleCommits > 0
        ? `; the runtime's ${fmt(costs.lifecycleCommits)} COMMITs (no fsync) ${costs.lifecycleCommitAvgMs.toFixed(2)} ms each`
        : '';
    lines.push(
      `  store: ${fmt(costs.commits)} acceptance COMMITs (an fsync each), ${(load.expected / costs.commits).toFixed(1)} actions each, ` +
        `${costs.commitAvgMs.toFixed(2)} ms each on average${lifecycle}; event loop inside a COMMIT ${pct(costs.commitShare)} of the run`,
    );
  }
  return lines;
}

const pairedText = (row: Row) =>
  row.pairedSlices ? `; medians of ${row.pairedSlices} slices, each after a baseline slice` : '';

/** The lines printed right after a target finished. */
export function targetBlock(row: Row): string {
  const { load } = row;
  const statuses = Object.entries(load.statusCounts)
    .map(([status, n]) => `${status} x ${fmt(n)}`)
    .join(', ');
  const lines = [
    `  ${fmt(load.reqPerSec)} req/s (${ratioText(row.ratio)} baseline; CPU ratio ${ratioText(row.cpuRatio)}: baseline µs per response / this one's${pairedText(row)})  ` +
      `p50 ${ms(load.p50Ms)} ms  p99 ${ms(load.p99Ms)} ms`,
    `  responses ${fmt(load.responses)} in ${load.seconds} s: ${statuses || 'none'}; non-2xx ${fmt(load.non2xx)}, ` +
      `unexpected status ${fmt(load.unexpected)}, errors ${fmt(load.errors)} (timeouts ${fmt(load.timeouts)})`,
    ...costLines(row),
  ];
  if (row.backlog) lines.push(backlogLine(row.backlog));
  const check = durability(row);
  if (check) lines.push(`  durability: ${check.text}`);
  if (row.logLines !== undefined) {
    lines.push(`  log file: ${fmt(row.logLines)} JSON lines (one per request)`);
  }
  return lines.join('\n');
}

const backlogText = ({ runs, events }: { runs: number; events: number }) =>
  `${fmt(runs)} agent runs and ${fmt(events)} heartbeat events`;

const unfinishedBacklog = ({ drain }: BacklogCharge) =>
  drain.remaining.runs + drain.remaining.events > 0;

function backlogLine({ drain, microsPerResponse, cpuRatio, commits }: BacklogCharge): string {
  if (drain.left.runs + drain.left.events === 0)
    return '  backlog: no agent run or heartbeat event was left when the load stopped';
  const finished =
    drain.remaining.runs + drain.remaining.events === 0
      ? `the server finished them in ${drain.seconds.toFixed(1)} s`
      : `the wait ended after ${drain.seconds.toFixed(1)} s with ${backlogText(drain.remaining)} left (their CPU not counted)`;
  return (
    `  backlog: ${backlogText(drain.left)} were left when the load stopped; ${finished}; ` +
    `with them ${microsPerResponse.toFixed(1)} µs of server CPU per response (CPU ratio ${ratioText(cpuRatio)}); ` +
    `the runtime's COMMITs during the drain (heartbeats' included): ${commits.count.toLocaleString('en-US')}` +
    (commits.count > 0
      ? `, ${((drain.left.runs - drain.remaining.runs) / commits.count).toFixed(2)} runs finished per COMMIT, ${(commits.micros / commits.count / 1000).toFixed(3)} ms each`
      : '')
  );
}

/** The CPU ratio an aim is judged by: with the backlog when it was measured. */
const judgedCpuRatio = (row: Row) => row.backlog?.cpuRatio ?? row.cpuRatio;

function storedCell(row: Row): string {
  if (row.target.hookgate?.memoryStore) return 'not durable';
  if (row.stored === undefined) return '-';
  return `${fmt(row.load.total2xx)} / ${fmt(row.stored)}`;
}

function tableCells(row: Row): string[] {
  const { load, costs } = row;
  return [
    row.target.label,
    String(row.target.expectStatus),
    fmt(load.reqPerSec),
    ratioText(row.ratio),
    row.target.aim === undefined ? '-' : `${row.target.aim.toFixed(2)}x`,
    ms(load.p50Ms),
    ms(load.p99Ms),
    fmt(load.non2xx),
    storedCell(row),
    costs.serverMicrosPerResponse.toFixed(0),
    ratioText(row.cpuRatio),
    costs.commits > 0 ? pct(costs.commitShare) : '-',
  ];
}

/** The backlog columns: CPU per response and its ratio with the work the load left queued. */
function backlogCells(row: Row): string[] {
  if (!row.backlog) return ['-', '-'];
  return [row.backlog.microsPerResponse.toFixed(0), ratioText(row.backlog.cpuRatio)];
}

const postgresCell = (row: Row) => row.postgresMicrosPerResponse?.toFixed(0) ?? '-';

/**
 * The markdown summary table (the backlog columns when a row drained one, a PostgreSQL CPU
 * column when a row has that figure).
 */
export function markdownTable(rows: readonly Row[]): string {
  const withBacklog = rows.some((row) => row.backlog !== undefined);
  const withPostgres = rows.some((row) => row.postgresMicrosPerResponse !== undefined);
  const header = [
    'target',
    'status',
    'req/s',
    'vs baseline',
    'aim',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    '2xx / rows stored',
    'server CPU µs/req',
    'CPU ratio',
    'in COMMIT',
    ...(withBacklog ? ['CPU µs/req with backlog', 'CPU ratio with backlog'] : []),
    ...(withPostgres ? ['PostgreSQL CPU µs/req'] : []),
  ];
  const align = ['---', ...header.slice(1).map(() => '---:')];
  const cells = (row: Row) => [
    ...tableCells(row),
    ...(withBacklog ? backlogCells(row) : []),
    ...(withPostgres ? [postgresCell(row)] : []),
  ];
  return [header, align, ...rows.map(cells)].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** Baseline at the end vs at the start: a warning when machine load drifted by over 10%. */
export function driftLine(rows: readonly Row[]): string | undefined {
  const again = rows.find((row) => row.target.key === 'baseline-again');
  if (again?.ratio === undefined) return undefined;
  const drift = Math.abs(1 - again.ratio);
  const verdict =
    drift > 0.1
      ? 'WARNING: the machine got faster or slower during the run; ratios are unreliable, run again'
      : 'stable';
  return `baseline drift: last run ${ratioText(again.ratio)} the first -> ${verdict}`;
}

/** One line per target with an aim: is it met? */
/**
 * The durable reference's row read as a ceiling: its ratios to the baseline, and each durable
 * hookgate target's req/s as a fraction of the reference's (none without a reference row).
 */
export function referenceLines(rows: readonly Row[]): string[] {
  const reference = rows.find((row) => row.target.reference);
  if (!reference?.ratio) return [];
  const lines = [
    `ceiling: the durable reference (node:http + one SQLite row, no hookgate) at ` +
      `${ratioText(reference.ratio)} baseline, CPU ratio ${ratioText(reference.cpuRatio)}: ` +
      'what durability alone leaves of the baseline on this machine',
  ];
  for (const row of rows) {
    if (!row.target.hookgate || row.target.expectStatus >= 300 || row.ratio === undefined) continue;
    lines.push(
      `  ${row.target.label}: ${(row.ratio / reference.ratio).toFixed(2)} of the reference's req/s`,
    );
  }
  return lines;
}

export function aimLines(rows: readonly Row[]): string[] {
  return rows.flatMap((row) => {
    const aim = row.target.aim;
    if (aim === undefined) return [];
    // Durability is asked of targets that answer 200; a refusal stores nothing by design.
    const stores = row.target.expectStatus < 300;
    const durable = stores
      ? row.stored !== undefined && durability(row)?.ok === true && clean(row)
      : clean(row);
    // Both ratios: a target that leaves work running (a queued session's runs) takes CPU from
    // the baseline slice after it, which flatters its paired req/s ratio but not its CPU ratio;
    // the CPU ratio with the backlog it left counts where it was measured.
    const cpu = judgedCpuRatio(row);
    // A backlog the server did not finish leaves the CPU ratio unknown: not met.
    const unfinished = row.backlog ? unfinishedBacklog(row.backlog) : false;
    const fast =
      !unfinished &&
      row.ratio !== undefined &&
      row.ratio >= aim &&
      (cpu === undefined || cpu >= aim);
    const judged = !row.backlog
      ? ''
      : unfinished
        ? ' with a backlog not finished'
        : ' with backlog';
    const p99Aim = row.target.p99AimMs;
    const quick = p99Aim === undefined || row.load.p99Ms < p99Aim;
    const met = durable && fast && quick ? 'met' : 'NOT met';
    const p99 = p99Aim === undefined ? '' : `, p99 ${ms(row.load.p99Ms)} ms (aim < ${p99Aim})`;
    const checked = stores ? 'every 200 durable' : 'every answer as expected';
    return [
      `  ${row.target.label}: ${ratioText(row.ratio)} baseline (aim ${aim.toFixed(2)}x; CPU ratio ` +
        `${ratioText(cpu)}${judged})${p99}, ${durable ? checked : 'durability/status problem'} -> aim ${met}`,
    ];
  });
}
