/**
 * Metrics of the transforms, end to end: calls by mapping and outcome, and
 * the process a missed deadline killed counted as a restart.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { value } from './helpers/metrics-text.ts';

describe('transform metrics', () => {
  const temp = tempDir();
  let hookgate: Hookgate;
  let metrics: Metrics;
  const post = (hook: string) =>
    fetch(`${hookgate.url}/hooks/${hook}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{}',
    }).then((res) => res.status);

  beforeAll(async () => {
    const root = path.join(temp.dir, 'hooks', 'transforms');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(root, 'quick.js'), 'export default () => ({ message: "quick" });\n');
    writeFileSync(path.join(root, 'never.js'), 'export default () => new Promise(() => {});\n');
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        transforms: { deadlineMs: 500 },
        mappings: [
          { id: 'quick', match: { path: 'quick' }, transform: { module: 'quick.js' } },
          { id: 'never', match: { path: 'never' }, transform: { module: 'never.js' } },
        ],
      },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    hookgate = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
    metrics = createMetrics({});
  });
  afterAll(async () => {
    metrics.close();
    await hookgate.close();
    temp.cleanup();
  });

  it('counts calls by outcome and the restart after a missed deadline', async () => {
    expect(await post('quick')).toBe(200);
    expect(await post('quick')).toBe(200);
    expect(await post('never')).toBe(500);
    const text = await vi.waitFor(
      async () => {
        const rendered = await metrics.render();
        expect(value(rendered, 'hookgate_transform_restarts_total', { reason: 'timeout' })).toBe(1);
        return rendered;
      },
      { timeout: 10_000 },
    );
    const calls = (labels: Record<string, string>) =>
      value(text, 'hookgate_transform_calls_total', labels);
    expect(calls({ mapping: 'quick', outcome: 'ok' })).toBe(2);
    expect(calls({ mapping: 'never', outcome: 'timeout' })).toBe(1);
    expect(
      value(text, 'hookgate_transform_call_duration_seconds_count', { mapping: 'quick' }),
    ).toBe(2);
    expect(
      value(text, 'hookgate_requests_total', { route: 'never', code: 'transform_timeout' }),
    ).toBe(1);
  });
});
