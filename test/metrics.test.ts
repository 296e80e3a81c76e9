/**
 * The metrics module over the real diagnostics channels: what is published
 * is what a scrape shows, with bounded labels, in its own registry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Exchange } from '../engine/ingress/exchange.ts';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import {
  actionsCommitted,
  authFailed,
  authLocked,
  deliveryFinished,
  requestFinished,
  runFinished,
  stageTimed,
  transformCalled,
  transformRestarted,
} from '../engine/observe/events.ts';
import { samples, series, value } from './helpers/metrics-text.ts';

const open: Metrics[] = [];
function metrics(deps?: Parameters<typeof createMetrics>[0]): Metrics {
  const m = createMetrics(deps);
  open.push(m);
  return m;
}
afterEach(() => {
  for (const m of open.splice(0)) m.close();
});

// What the handler publishes: the exchange as the stages left it.
function finished(route: string | undefined, status: number, extra: Record<string, unknown> = {}) {
  const exchange = {
    hook: 'whatever-the-caller-sent',
    ...(route !== undefined && { route: { name: route } }),
    ...(extra['actions'] !== undefined && {
      accepted: { actions: Array.from({ length: extra['actions'] as number }, () => ({})) },
    }),
  } as unknown as Exchange;
  requestFinished.publish({
    exchange,
    status,
    ...(typeof extra['code'] === 'string' && { code: extra['code'] }),
    durationMs: 12,
    replayed: extra['replayed'] === true,
  });
}

describe('createMetrics', () => {
  it('counts requests by route, status and code, with "(unknown)" for unserved names', async () => {
    const m = metrics();
    finished('wake', 200, { actions: 1 });
    finished('wake', 200, { replayed: true });
    finished('', 404, { code: 'unknown_hook' });
    finished(undefined, 429, { code: 'rate_limited' });
    const text = await m.render();
    expect(value(text, 'hookgate_requests_total', { route: 'wake', status: '200' })).toBe(2);
    expect(
      value(text, 'hookgate_requests_total', { route: '(unknown)', code: 'unknown_hook' }),
    ).toBe(1);
    expect(value(text, 'hookgate_requests_total', { route: '(unknown)', status: '429' })).toBe(1);
    expect(value(text, 'hookgate_idempotent_replays_total', { route: 'wake' })).toBe(1);
    expect(value(text, 'hookgate_actions_accepted_total', { route: 'wake' })).toBe(1);
    expect(value(text, 'hookgate_request_duration_seconds_count', { route: 'wake' })).toBe(2);
    expect(value(text, 'hookgate_request_duration_seconds_sum', { route: 'wake' })).toBeCloseTo(
      0.024,
    );
    expect(text).not.toContain('whatever-the-caller-sent');
    expect(m.contentType).toMatch(/^text\/plain/);
  });

  it('shows every other channel: stages, commits, auth, runs, deliveries, transforms', async () => {
    const m = metrics();
    stageTimed.publish({ stage: 'admit', route: undefined, ms: 0.02 });
    stageTimed.publish({ stage: 'commit', route: 'wake', ms: 3 });
    actionsCommitted.publish({ count: 3 });
    authFailed.publish({ route: 'github', failure: 'mismatch' });
    authFailed.publish({ route: '', failure: 'token' });
    authLocked.publish({ lockoutSeconds: 60 });
    runFinished.publish({ agentId: 'main', outcome: 'done', durationMs: 1500 });
    runFinished.publish({ agentId: 'main', outcome: 'retry', durationMs: 10 });
    deliveryFinished.publish({ source: 'agent', channel: 'slack', outcome: 'sent' });
    deliveryFinished.publish({ source: 'heartbeat', channel: 'last', outcome: 'skipped' });
    transformCalled.publish({ mappingId: 'shape', outcome: 'ok', durationMs: 4 });
    transformCalled.publish({ mappingId: 'shape', outcome: 'timeout', durationMs: 500 });
    transformRestarted.publish({ reason: 'timeout' });
    const text = await m.render();
    expect(value(text, 'hookgate_stage_duration_seconds_count', { stage: 'admit' })).toBe(1);
    expect(value(text, 'hookgate_stage_duration_seconds_sum', { stage: 'commit' })).toBeCloseTo(
      0.003,
    );
    expect(value(text, 'hookgate_actions_committed_total')).toBe(3);
    expect(
      value(text, 'hookgate_auth_failures_total', { route: 'github', reason: 'mismatch' }),
    ).toBe(1);
    expect(
      value(text, 'hookgate_auth_failures_total', { route: '(unknown)', reason: 'token' }),
    ).toBe(1);
    expect(value(text, 'hookgate_auth_lockouts_total')).toBe(1);
    expect(value(text, 'hookgate_agent_runs_total', { agent: 'main', outcome: 'done' })).toBe(1);
    expect(value(text, 'hookgate_agent_runs_total', { agent: 'main', outcome: 'retry' })).toBe(1);
    expect(value(text, 'hookgate_agent_run_duration_seconds_sum', { agent: 'main' })).toBeCloseTo(
      1.51,
    );
    expect(
      value(text, 'hookgate_deliveries_total', {
        channel: 'slack',
        outcome: 'sent',
        source: 'agent',
      }),
    ).toBe(1);
    expect(value(text, 'hookgate_deliveries_total', { channel: 'last', outcome: 'skipped' })).toBe(
      1,
    );
    expect(
      value(text, 'hookgate_transform_calls_total', { mapping: 'shape', outcome: 'timeout' }),
    ).toBe(1);
    expect(
      value(text, 'hookgate_transform_call_duration_seconds_count', { mapping: 'shape' }),
    ).toBe(2);
    expect(value(text, 'hookgate_transform_restarts_total', { reason: 'timeout' })).toBe(1);
  });

  it('reads the queue depth at each scrape, and a failing read leaves no stale numbers', async () => {
    let counts: Record<string, number> | Error = { queued: 4, running: 1, done: 9, bogus: 7 };
    const m = metrics({
      queueDepth: () => {
        if (counts instanceof Error) throw counts;
        return counts;
      },
    });
    let text = await m.render();
    expect(value(text, 'hookgate_queue_actions', { state: 'queued' })).toBe(4);
    expect(value(text, 'hookgate_queue_actions', { state: 'done' })).toBe(9);
    expect(series(text, 'hookgate_queue_actions', { state: 'bogus' })).toHaveLength(0);
    counts = { queued: 0, running: 0, done: 10, failed: 0, dead: 0 };
    text = await m.render();
    expect(value(text, 'hookgate_queue_actions', { state: 'queued' })).toBe(0);
    counts = new Error('database is locked');
    text = await m.render();
    expect(series(text, 'hookgate_queue_actions')).toHaveLength(0);
  });

  it('says whether this instance leads, read at each scrape', async () => {
    let leading = false;
    const m = metrics({ leading: () => leading });
    expect(value(await m.render(), 'hookgate_leader')).toBe(0);
    leading = true;
    expect(value(await m.render(), 'hookgate_leader')).toBe(1);
  });

  it('includes the default process metrics', async () => {
    const text = await metrics().render();
    expect(series(text, 'process_cpu_user_seconds_total')).toHaveLength(1);
    expect(series(text, 'nodejs_heap_size_used_bytes')).toHaveLength(1);
  });

  it('two instances count apart; close() stops listening', async () => {
    const a = metrics();
    const b = metrics();
    finished('wake', 200);
    b.close();
    finished('wake', 200);
    expect(value(await a.render(), 'hookgate_requests_total')).toBe(2);
    expect(samples(await b.render())).toHaveLength(0);
    a.close();
    open.splice(0);
    expect(requestFinished.hasSubscribers).toBe(false);
    expect(stageTimed.hasSubscribers).toBe(false);
  });

  it('a malformed event is skipped, never thrown into the publisher', async () => {
    const m = metrics();
    expect(() => actionsCommitted.publish({ count: -1 })).not.toThrow();
    expect(() => requestFinished.publish({})).not.toThrow();
    finished('wake', 200);
    expect(value(await m.render(), 'hookgate_requests_total')).toBe(1);
  });
});
