/**
 * `npm run bench:memory`: does hookgate's memory stay flat under a long
 * mixed flood? One hookgate server (own process, real SQLite store, the
 * runtime on with the bench's agent answering at once) gets, over and over
 * on every connection, a /wake, an /agent turn, a mapped GitHub push, a
 * transform call, a refused token and a 32 KB /wake, for `--minutes`
 * (default 10). Its resident memory (VmRSS) is read every 5 s and printed
 * per minute; the verdict compares the peak of the last half with the peak
 * of the first half after the first minute (warm-up: V8 grows its heap and
 * SQLite its page cache). 127.0.0.1 only, bounded in time.
 *
 * Options: --minutes N (default 10), --connections N (default 16).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startBenchAgent } from './agent-server.ts';
import { startServerProcess } from './child.ts';
import { allTargets, type Target, UNREACHABLE_MAX_FAILURES } from './targets.ts';

const SAMPLE_EVERY_MS = 5_000;
// Peak growth from the first half to the last half that still counts as flat.
const FLAT_GROWTH = 0.1;

function residentMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

function request(target: Target, body = target.body) {
  return {
    method: 'POST' as const,
    path: target.path,
    headers: {
      ...target.headers,
      'content-type': 'application/json',
      authorization: `Bearer ${target.token}`,
    },
    body,
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { minutes: { type: 'string' }, connections: { type: 'string' } },
  });
  const minutes = Number(values.minutes ?? 10);
  const connections = Number(values.connections ?? 16);
  if (!(minutes > 0) || !(connections > 0)) throw new Error('--minutes and --connections: > 0');
  const byKey = new Map(allTargets([0]).map((target) => [target.key, target]));
  const target = (key: string) => byKey.get(key) as Target;
  const mapped = target('mapped').hookgate?.hooks as { mappings: unknown[] };
  const transform = target('transform').hookgate;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookgate-bench-memory-'));
  const agent = await startBenchAgent();
  const server = await startServerProcess({
    kind: 'hookgate',
    dataDir,
    commitDelayMs: 0,
    runtime: true,
    agentUrl: agent.url,
    maxFailures: UNREACHABLE_MAX_FAILURES,
    hooks: {
      ...mapped,
      mappings: [
        ...mapped.mappings,
        ...((transform?.hooks as { mappings?: unknown[] } | undefined)?.mappings ?? []),
      ],
    },
    ...(transform?.transformFiles && { transformFiles: transform.transformFiles }),
  });
  const bigWake = JSON.stringify({ text: 'x'.repeat(32 * 1024), mode: 'next-heartbeat' });
  const samples: Array<{ atS: number; mb: number; heapMb: number; externalMb: number }> = [];
  const started = Date.now();
  const take = async () => {
    const mb = residentMb(server.pid);
    const { heapUsed, external } = await server.sample();
    samples.push({
      atS: (Date.now() - started) / 1000,
      mb,
      heapMb: heapUsed / 2 ** 20,
      externalMb: external / 2 ** 20,
    });
  };
  const sampler = setInterval(() => void take(), SAMPLE_EVERY_MS);
  console.log(
    `memory flood: ${minutes} min, ${connections} connections, mixed requests to ${server.url}`,
  );
  try {
    const result = await autocannon({
      url: server.url,
      connections,
      duration: minutes * 60,
      timeout: 10,
      requests: [
        request(target('wake')),
        request(target('agent')),
        request(target('mapped')),
        request(target('transform')),
        request(target('unauthorized')),
        request(target('wake'), bigWake),
      ],
    });
    clearInterval(sampler);
    await take();
    const statuses = Object.entries(result.statusCodeStats)
      .map(([status, { count }]) => `${status} x ${count}`)
      .join(', ');
    console.log(
      `requests: ${result.requests.total} (${Math.round(result.requests.average)}/s); ${statuses}; ` +
        `errors ${result.errors}; agent runs answered ${agent.runs()}`,
    );
    for (let minute = 1; minute <= Math.ceil(minutes); minute++) {
      const inMinute = samples.filter((s) => s.atS > (minute - 1) * 60 && s.atS <= minute * 60);
      if (inMinute.length === 0) continue;
      const peak = Math.max(...inMinute.map((s) => s.mb));
      const last = inMinute[inMinute.length - 1];
      console.log(
        `  minute ${minute}: RSS peak ${peak.toFixed(0)} MB, at its end ${last?.mb.toFixed(0)} MB ` +
          `(V8 heap in use ${last?.heapMb.toFixed(0)} MB, external ${last?.externalMb.toFixed(0)} MB)`,
      );
    }
    const settled = samples.filter((s) => s.atS > 60);
    const half = settled.length >> 1;
    const peakOf = (list: typeof samples) => Math.max(0, ...list.map((s) => s.mb));
    const first = peakOf(settled.slice(0, half));
    const last = peakOf(settled.slice(half));
    const growth = first > 0 ? last / first - 1 : 0;
    const flat = growth <= FLAT_GROWTH;
    console.log(
      `RSS peak after the first minute: first half ${first.toFixed(0)} MB, last half ` +
        `${last.toFixed(0)} MB (${(growth * 100).toFixed(1)}%) -> ${flat ? 'flat' : 'GROWING'}`,
    );
    return flat ? 0 : 1;
  } finally {
    clearInterval(sampler);
    await server.kill();
    await agent.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(`bench:memory: ${(err as Error).message}`);
    process.exitCode = 2;
  },
);
