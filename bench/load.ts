/**
 * Driving one target with autocannon: a short warm-up, then the measured
 * run (separate calls, so the caller can sample server CPU in between).
 * Latency percentiles come from our own microsecond histogram, fed from
 * every response, because autocannon's histogram rounds to whole ms.
 * Several servers (instances sharing one store) are driven by one
 * autocannon run whose connections are dealt round-robin over their URLs.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { createHmac, randomUUID } from 'node:crypto';
import autocannon, { type Result } from 'autocannon';
import type { Target } from './targets.ts';

/** Load shape shared by every target. */
export type LoadSettings = {
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  pipelining: number;
};

/** What one measured run produced (plus the warm-up's counts). */
export type LoadResult = {
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  responses: number;
  /** Responses with the target's expected status. */
  expected: number;
  /** Responses with any other status. */
  unexpected: number;
  non2xx: number;
  statusCounts: Record<string, number>;
  errors: number;
  timeouts: number;
  /** 2xx responses of warm-up and measured run together (each is a stored action). */
  total2xx: number;
  seconds: number;
};

function options(urls: readonly string[], target: Target, settings: LoadSettings, seconds: number) {
  const headers = {
    ...target.headers,
    'content-type': 'application/json',
    authorization: `Bearer ${target.token}`,
  };
  return {
    url: urls.length === 1 ? `${urls[0]}${target.path}` : urls.map((url) => `${url}${target.path}`),
    method: 'POST' as const,
    headers,
    body: target.body,
    ...(target.githubSecret !== undefined && {
      requests: [{ setupRequest: githubSigner(target.githubSecret, headers, target.body) }],
    }),
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration: seconds,
    timeout: 10,
  };
}

// Every request a new delivery, as GitHub's are: its own id and its own body (an identical signed
// body would be a replay, answered without the work), signed as GitHub signs.
function githubSigner(secret: string, headers: Record<string, string>, body: string) {
  // Warm-up and run each get their own prefix: a warm-up id repeated in the run would be a replay.
  const prefix = randomUUID().slice(0, 8);
  const template = JSON.parse(body) as Record<string, unknown>;
  let delivery = 0;
  return (request: Record<string, unknown>) => {
    const id = `${prefix}-${++delivery}`;
    const fresh = JSON.stringify({ ...template, delivery: id });
    return {
      ...request,
      body: fresh,
      headers: {
        ...headers,
        'x-github-delivery': id,
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(fresh).digest('hex')}`,
      },
    };
  };
}

function statusCounts(result: Result): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) counts[status] = count;
  return counts;
}

/** Run the warm-up load on the servers at `urls`; resolves with its 2xx count. */
export async function warmUp(
  urls: readonly string[],
  target: Target,
  settings: LoadSettings,
): Promise<number> {
  if (settings.warmupSeconds <= 0) return 0;
  const result = await autocannon(options(urls, target, settings, settings.warmupSeconds));
  return result['2xx'];
}

/**
 * Measure `target` on the servers at `urls` together; `warm2xx` is added to the 2xx total.
 * Latencies go into `histogram` when given (slices of one target share one).
 */
export async function measure(
  urls: readonly string[],
  target: Target,
  settings: LoadSettings,
  warm2xx: number,
  histogram: RecordableHistogram = createHistogram(),
): Promise<LoadResult> {
  const instance = autocannon(options(urls, target, settings, settings.durationSeconds));
  instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
    histogram.record(Math.max(1, Math.round(ms * 1000)));
  });
  const result = await instance;
  const counts = statusCounts(result);
  const expected = counts[String(target.expectStatus)] ?? 0;
  const responses = Object.values(counts).reduce((sum, n) => sum + n, 0);
  return {
    reqPerSec: result.requests.mean,
    p50Ms: histogram.percentile(50) / 1000,
    p99Ms: histogram.percentile(99) / 1000,
    responses,
    expected,
    unexpected: responses - expected,
    non2xx: result.non2xx,
    statusCounts: counts,
    errors: result.errors,
    timeouts: result.timeouts,
    total2xx: result['2xx'] + warm2xx,
    seconds: result.duration,
  };
}

/** Slices of one target's load as one result (their latencies were recorded in `histogram`). */
export function mergeSlices(
  slices: readonly LoadResult[],
  histogram: RecordableHistogram,
  warm2xx: number,
): LoadResult {
  const sum = (pick: (slice: LoadResult) => number) =>
    slices.reduce((total, slice) => total + pick(slice), 0);
  const statusCounts: Record<string, number> = {};
  for (const slice of slices) {
    for (const [status, n] of Object.entries(slice.statusCounts)) {
      statusCounts[status] = (statusCounts[status] ?? 0) + n;
    }
  }
  const seconds = sum((slice) => slice.seconds);
  const responses = sum((slice) => slice.responses);
  return {
    reqPerSec: seconds > 0 ? responses / seconds : 0,
    p50Ms: histogram.percentile(50) / 1000,
    p99Ms: histogram.percentile(99) / 1000,
    responses,
    expected: sum((slice) => slice.expected),
    unexpected: sum((slice) => slice.unexpected),
    non2xx: sum((slice) => slice.non2xx),
    statusCounts,
    errors: sum((slice) => slice.errors),
    timeouts: sum((slice) => slice.timeouts),
    total2xx: sum((slice) => slice.total2xx) + warm2xx,
    seconds: Math.round(seconds * 100) / 100,
  };
}
