/**
 * Metrics of the runtime, end to end: a real agent run (the recording test
 * agent) delivered to a Slack stand-in, and a runner that cannot start,
 * retried until dead; the queue depth read from the runtime store.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetrics, type Metrics } from '../engine/observe/metrics.ts';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { series, value } from './helpers/metrics-text.ts';
import {
  agentRunner,
  killAgentGroups,
  readRecords,
  type Stub,
  startStub,
  waitForFinal,
} from './helpers/runtime.ts';

describe('runtime metrics', () => {
  let server: TestServer;
  let slack: Stub;
  let metrics: Metrics;
  const temp = tempDir('hookgate-metrics-');
  const record = path.join(temp.dir, 'agent.jsonl');

  beforeAll(async () => {
    slack = await startStub(() => ({ body: { ok: true, ts: '1700000000.000100' } }));
    server = await startTestServer(
      {
        channels: { slack: { botToken: 'xoxb-test-token', baseUrl: slack.url } },
        agents: {
          defaults: { timeoutSeconds: 30, runner: agentRunner(record) },
          list: [
            { id: 'main', default: true },
            { id: 'ghost', runner: { kind: 'command', argv: ['/nonexistent/hookgate-agent'] } },
          ],
        },
        runtime: {
          retry: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 100 },
          heartbeat: { every: 'off' },
        },
      },
      { dataDir: temp.dir, runtime: true },
    );
    const store = server.runtime?.store;
    if (!store) throw new Error('the runtime is off');
    metrics = createMetrics({ queueDepth: () => store.countByState() });
  });
  afterAll(async () => {
    metrics.close();
    await server.stop();
    await slack.close();
    killAgentGroups(readRecords(record));
    temp.cleanup();
  });

  async function post(body: Record<string, unknown>): Promise<string> {
    const res = await server.post('agent', body);
    const json = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(json)).toBe(200);
    return String(json['runId']);
  }

  it('counts runs by agent and outcome, deliveries by channel, and the queue by state', async () => {
    const delivered = await post({
      message: 'Summarise the inbox',
      name: 'Inbox',
      wakeMode: 'next-heartbeat',
      deliver: true,
      channel: 'slack',
      to: 'C0123456789',
    });
    const ghost = await post({
      message: 'nobody home',
      agentId: 'ghost',
      wakeMode: 'next-heartbeat',
    });
    expect((await waitForFinal(temp.dir, delivered)).state).toBe('done');
    expect((await waitForFinal(temp.dir, ghost)).state).toBe('dead');

    const text = await metrics.render();
    expect(value(text, 'hookgate_agent_runs_total', { agent: 'main', outcome: 'done' })).toBe(1);
    expect(value(text, 'hookgate_agent_runs_total', { agent: 'ghost', outcome: 'retry' })).toBe(1);
    expect(value(text, 'hookgate_agent_runs_total', { agent: 'ghost', outcome: 'dead' })).toBe(1);
    expect(value(text, 'hookgate_agent_run_duration_seconds_count', { agent: 'main' })).toBe(1);
    expect(
      value(text, 'hookgate_deliveries_total', {
        channel: 'slack',
        outcome: 'sent',
        source: 'agent',
      }),
    ).toBe(1);
    expect(value(text, 'hookgate_queue_actions', { state: 'done' })).toBe(1);
    expect(value(text, 'hookgate_queue_actions', { state: 'dead' })).toBe(1);
    expect(value(text, 'hookgate_queue_actions', { state: 'queued' })).toBe(0);
    expect(series(text, 'hookgate_queue_actions')).toHaveLength(5);
    // The reply's recipient and text are no labels.
    expect(text).not.toContain('C0123456789');
    expect(text).not.toContain('xoxb-test-token');
  });
});
