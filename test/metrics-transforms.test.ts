/**
 * Metrics of the transforms, end to end: calls by mapping and outcome, and
 * the process a missed deadline killed counted as a restart.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Hookgate } from '../engine/hookgate.ts';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { NEVER_SETTLES, QUICK, startWithTransforms } from './helpers/transform-server.ts';
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
    hookgate = await startWithTransforms(
      temp.dir,
      { quick: QUICK, never: NEVER_SETTLES },
      { deadlineMs: 500 },
    );
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
