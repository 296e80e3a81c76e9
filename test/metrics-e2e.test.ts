/**
 * End-to-end: hookgate in-process, metrics created beside it, real requests
 * over HTTP; what a scrape shows is what the requests did. Hostile hook
 * names never become labels, no token reaches the output, and the request
 * log line carries stage timings at debug level only.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { startTestServer, TOKEN, type TestServer, tempDir } from './helpers/hookgate.ts';
import { series, value } from './helpers/metrics-text.ts';

const WRONG_TOKEN = 'wrong-token-guess-9876543210';

describe('metrics of a running hookgate', () => {
  let server: TestServer;
  let store: SqliteRuntimeStore;
  let metrics: Metrics;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
        mappings: [
          {
            id: 'ci',
            match: { path: 'ingest' },
            action: 'wake',
            templates: { text: 'CI: {{status}}' },
          },
        ],
      },
    });
    store = SqliteRuntimeStore.open(server.dataDir);
    metrics = createMetrics({ queueDepth: () => store.countByState() });
  });
  afterAll(async () => {
    metrics.close();
    await store.close();
    await server.stop();
  });

  const hostile = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      encodeURIComponent(`x${i}-${Math.random().toString(36).slice(2)}"}\n{evil="1`),
    );

  it('counts what the requests did, and hostile names leave the label set alone', async () => {
    expect((await server.post('wake', { text: 'hello' })).status).toBe(200);
    const keyed = { headers: { 'idempotency-key': 'metrics-key-1' } };
    expect((await server.post('wake', { text: 'once' }, keyed)).status).toBe(200);
    const again = await server.post('wake', { text: 'once' }, keyed);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((await server.post('ingest', { status: 'green' })).status).toBe(200);

    // A stream of made-up hook names (authenticated, so nothing is locked): all 404.
    const names = hostile(40);
    for (const name of names.slice(0, 20)) expect((await server.post(name, {})).status).toBe(404);
    const before = series(await metrics.render(), 'hookgate_requests_total').length;
    for (const name of names.slice(20)) expect((await server.post(name, {})).status).toBe(404);

    // Three wrong tokens lock the address: the third is the last 401, then 429.
    for (let i = 0; i < 3; i++)
      expect((await server.post('wake', { text: 'x' }, { token: WRONG_TOKEN })).status).toBe(401);
    expect((await server.post('wake', { text: 'x' })).status).toBe(429);

    const text = await metrics.render();
    const requests = (labels: Record<string, string>) =>
      value(text, 'hookgate_requests_total', labels);
    expect(requests({ route: 'wake', status: '200', code: '' })).toBe(3);
    expect(requests({ route: 'ingest', status: '200' })).toBe(1);
    expect(requests({ route: '(unknown)', status: '404', code: 'unknown_hook' })).toBe(40);
    expect(requests({ route: 'wake', status: '401', code: 'unauthorized' })).toBe(3);
    // Refused at admit, under the route its name picks (as every stage's answers are).
    expect(requests({ route: 'wake', status: '429', code: 'rate_limited' })).toBe(1);
    expect(value(text, 'hookgate_idempotent_replays_total', { route: 'wake' })).toBe(1);
    expect(value(text, 'hookgate_auth_failures_total', { route: 'wake', reason: 'token' })).toBe(3);
    expect(value(text, 'hookgate_auth_lockouts_total')).toBe(1);
    expect(value(text, 'hookgate_actions_accepted_total', { route: 'wake' })).toBe(2);
    expect(value(text, 'hookgate_actions_accepted_total', { route: 'ingest' })).toBe(1);
    expect(value(text, 'hookgate_actions_committed_total')).toBe(3);
    // The runtime is off in this test: what was committed waits in the queue.
    expect(value(text, 'hookgate_queue_actions', { state: 'queued' })).toBe(3);
    expect(value(text, 'hookgate_queue_actions', { state: 'done' })).toBe(0);
    // Every request passed admit; only the three stored ones reached commit.
    expect(value(text, 'hookgate_stage_duration_seconds_count', { stage: 'admit' })).toBe(48);
    expect(value(text, 'hookgate_stage_duration_seconds_count', { stage: 'commit' })).toBe(3);
    expect(value(text, 'hookgate_request_duration_seconds_count', { route: 'wake' })).toBe(7);

    // 20 more unknown names added no series, and no name reached the output.
    expect(series(text, 'hookgate_requests_total')).toHaveLength(before + 2);
    const routes = new Set(
      series(text, 'hookgate_requests_total').map((sample) => sample.labels['route']),
    );
    expect(routes).toEqual(new Set(['wake', 'ingest', '(unknown)']));
    for (const name of names) {
      expect(text).not.toContain(name);
      expect(text).not.toContain(decodeURIComponent(name).slice(0, 12));
    }
  });

  it('no token appears in the output', async () => {
    const text = await metrics.render();
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(WRONG_TOKEN);
    expect(text).not.toMatch(/bearer/i);
  });
});

describe('the request log line', () => {
  async function requestLine(level: 'debug' | 'info'): Promise<Record<string, unknown>> {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n'))
          if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const { dir, cleanup } = tempDir();
    const loaded = resolveConfig(
      { server: { host: '127.0.0.1', port: 0 }, hooks: { enabled: true, token: TOKEN } },
      { baseDir: dir, dataDir: dir, env: {} },
    );
    const gate = await startHookgate(loaded, { logger: pino({ level }, sink), runtime: false });
    try {
      const res = await fetch(`${gate.url}/hooks/wake`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ text: 'hello' }),
      });
      expect(res.status).toBe(200);
      return await vi.waitFor(() => {
        const line = lines.find((l) => l['msg'] === 'request');
        if (!line) throw new Error('no request line yet');
        return line;
      });
    } finally {
      await gate.close();
      cleanup();
    }
  }

  it('carries each stage timing at debug level', async () => {
    const line = await requestLine('debug');
    const stages = line['stages'] as Record<string, number>;
    expect(Object.keys(stages)).toEqual([
      'admit',
      'pickRoute',
      'subscribe',
      'authenticateHeaders',
      'readBody',
      'authenticateBody',
      'parse',
      'slackHandshake',
      'normalise',
      'replayCheck',
      'accept',
      'commit',
    ]);
    for (const ms of Object.values(stages)) expect(ms).toBeGreaterThanOrEqual(0);
  });

  it('carries none at info level', async () => {
    const line = await requestLine('info');
    expect(line['status']).toBe(200);
    expect(line).not.toHaveProperty('stages');
  });
});
