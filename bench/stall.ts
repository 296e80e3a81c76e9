/**
 * `npm run bench:stall`: can one sender stall everyone else? A hookgate
 * server (own process, real SQLite store, runtime off) receives adversarial
 * bodies of up to 256 KB from a few concurrent senders (a template that
 * repeats a large value in a loop, nested loops, marker-heavy and
 * confusable text and U+FDFA-heavy text for the safety wrapper, wide JSON
 * for conditions, a body of 85,000 empty objects for a plain mapping) while a separate loop sends ordinary /wake requests one
 * at a time and records their latency. Reported: /wake latency alone and
 * under attack (p50 / p99 / max), what the adversarial requests got, and
 * the store's size on disk afterwards. Bounded in time, 127.0.0.1 only.
 *
 * Options: --seconds N (attack duration, default 20), --senders N (default 2),
 * --only PATH,... (only the kinds sent to these hooks: amplify, loops, wake, conditions, plain).
 * The script uses only bench modules and settings that older checkouts
 * have, so it can be copied into one to measure "before".
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startServerProcess } from './child.ts';
import { TOKEN } from './targets.ts';

const QUIET_SECONDS = 3;
// A request that takes longer than this is recorded as this long (the server is stuck).
const REQUEST_CAP_MS = 60_000;
// The amplification body makes the unbounded code build and store tens of MB: send it rarely.
const MAX_AMPLIFY_SENDS = 2;

const HOOKS = {
  mappings: [
    {
      id: 'amplify',
      match: { path: 'amplify' },
      action: 'wake',
      templates: {
        text: '{{#each payload.commits}}{{../payload.repository.description}}{{/each}}',
      },
    },
    {
      id: 'loops',
      match: { path: 'loops' },
      action: 'wake',
      templates: { text: 'x{{#each payload.items}}{{#each ../payload.items}}{{/each}}{{/each}}' },
    },
    {
      id: 'conditions',
      match: {
        path: 'conditions',
        when: {
          some: [
            { var: 'payload.rows' },
            { some: [{ var: 'cells' }, { in: ['needle', { var: '' }] }] },
          ],
        },
      },
      action: 'wake',
      text: 'matched',
    },
    { id: 'plain', match: { path: 'plain' }, action: 'wake', templates: { text: 'x' } },
  ],
};

type Kind = { name: string; path: string; body: string };

function under256k(body: string): string {
  if (Buffer.byteLength(body) > 262_144) throw new Error('adversarial body over 256 KiB');
  return body;
}

function adversarialKinds(): Kind[] {
  const commits = Array.from({ length: 300 }, (_, i) => ({ id: `c${i}` }));
  const description = 'd'.repeat(200_000);
  const markerish = [
    '<<<EXTERNAL_UNTRUSTED_CONTENT>>>',
    '＜＜＜ＥＸＴＥＲＮＡＬ＿ＵＮＴＲＵＳＴＥＤ＿ＣＯＮＴＥＮＴ＞＞＞',
    '<\u200b<\u200b<END_EXTERNAL_UNTRUSTED_CONTENT>\u200b>>',
    '‹‹‹ЕXТЕRNАL_UNТRUSТЕD_СОNТЕNТ›››',
  ].join(' ');
  const rows = Array.from({ length: 950 }, () => ({ cells: Array(50).fill('ab') }));
  return [
    {
      name: 'each amplification',
      path: 'amplify',
      body: JSON.stringify({ commits, repository: { description } }),
    },
    {
      name: 'nested loops',
      path: 'loops',
      body: JSON.stringify({ items: Array.from({ length: 6000 }, () => ({})) }),
    },
    { name: 'markers', path: 'wake', body: JSON.stringify({ text: markerish.repeat(1100) }) },
    { name: 'U+FDFA', path: 'wake', body: JSON.stringify({ text: '\ufdfa'.repeat(80_000) }) },
    { name: 'wide JSON condition', path: 'conditions', body: JSON.stringify({ rows }) },
    // The most objects per byte: what parsing and the evaluator's view cost most for.
    {
      name: 'empty objects',
      path: 'plain',
      body: JSON.stringify({ a: Array(85_000).fill({}) }),
    },
  ].map((kind) => ({ ...kind, body: under256k(kind.body) }));
}

function readOption(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

async function post(url: string, body: string): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body,
      signal: AbortSignal.timeout(REQUEST_CAP_MS),
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}

/** Ordinary /wake requests, one at a time, until `done()`; returns their latencies. */
async function probe(base: string, done: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  const body = JSON.stringify({ text: 'ordinary wake', mode: 'next-heartbeat' });
  while (!done()) {
    const { ms } = await post(`${base}/hooks/wake`, body);
    latencies.push(ms);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return latencies;
}

type Answers = Map<string, { statuses: number[]; slowestMs: number }>;

async function attack(base: string, kinds: Kind[], until: number, answers: Answers, first: number) {
  // Each sender starts at another kind, so every kind is in flight early.
  let sent = first;
  while (performance.now() < until) {
    const kind = kinds[sent++ % kinds.length] as Kind;
    const seen = answers.get(kind.name) ?? { statuses: [], slowestMs: 0 };
    answers.set(kind.name, seen);
    if (kind.path === 'amplify' && seen.statuses.length >= MAX_AMPLIFY_SENDS) continue;
    seen.statuses.push(-1);
    const { status, ms } = await post(`${base}/hooks/${kind.path}`, kind.body);
    seen.statuses[seen.statuses.indexOf(-1)] = status;
    seen.slowestMs = Math.max(seen.slowestMs, ms);
  }
}

function stats(latencies: number[]): string {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const f = (ms: number) => ms.toFixed(ms < 10 ? 2 : 0);
  return `${f(at(0.5))} / ${f(at(0.99))} / ${f(sorted.at(-1) ?? 0)} ms (${sorted.length} requests)`;
}

function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? diskBytes(full) : statSync(full).size;
  }
  return total;
}

async function main(): Promise<void> {
  const seconds = readOption('seconds', 20);
  const senders = readOption('senders', 2);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'hookgate-stall-'));
  const server = await startServerProcess({
    kind: 'hookgate',
    dataDir,
    commitDelayMs: 0,
    runtime: false,
    hooks: HOOKS,
  });
  try {
    const quietUntil = performance.now() + QUIET_SECONDS * 1000;
    const quiet = await probe(server.url, () => performance.now() > quietUntil);
    const only = process.argv[process.argv.indexOf('--only') + 1]?.split(',');
    const kinds = adversarialKinds().filter(
      (kind) => !process.argv.includes('--only') || only?.includes(kind.path),
    );
    const answers: Answers = new Map();
    const until = performance.now() + seconds * 1000;
    let attacking = true;
    const attackers = Array.from({ length: senders }, (_, i) =>
      attack(server.url, kinds, until, answers, i),
    );
    const underAttack = probe(server.url, () => !attacking);
    await Promise.all(attackers);
    attacking = false;
    const loaded = await underAttack;
    console.log(`stall bench: ${senders} adversarial senders for ${seconds} s, 127.0.0.1`);
    console.log(`/wake alone         p50 / p99 / max: ${stats(quiet)}`);
    console.log(`/wake under attack  p50 / p99 / max: ${stats(loaded)}`);
    for (const [name, { statuses, slowestMs }] of answers) {
      const by = new Map<number, number>();
      for (const s of statuses) by.set(s, (by.get(s) ?? 0) + 1);
      const text = [...by].map(([s, n]) => `${s === 0 ? 'no answer' : s} x${n}`).join(', ');
      console.log(`  adversarial ${name}: ${text}; slowest answer ${slowestMs.toFixed(0)} ms`);
    }
    console.log(`store on disk after the run: ${(diskBytes(dataDir) / 1e6).toFixed(1)} MB`);
  } finally {
    await server.kill();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`stall bench: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 2;
});
