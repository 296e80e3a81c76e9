/**
 * Attack (by a redeploy): a server stopped while a run's reply is being sent. The send that
 * shutdown interrupted is documented as not counting, and the action's own attempts gave it
 * back, but the reply's delivery progress kept its number: with maxAttempts 2, one interrupted
 * send and one failure ended the reply dead after a single real failure, never retried. The
 * interrupted attempt is now given back in the delivery's count too.
 */
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startTestServer, tempDir } from './helpers/hookgate.ts';
import { agentRunner, waitFor, waitForFinal } from './helpers/runtime.ts';
import { startStandIn } from './helpers/stand-in.ts';

const temp = tempDir();
afterAll(() => temp.cleanup());

it('a send that shutdown interrupted is not counted against the reply', async () => {
  let hang = true;
  const standIn = await startStandIn(() =>
    hang
      ? { status: 200, body: { ok: true }, delayMs: 10_000 }
      : { status: 502, body: { ok: false, description: 'Bad Gateway' } },
  );
  const config = {
    channels: { telegram: { botToken: '123:refund', baseUrl: `${standIn.url}/tg` } },
    runtime: {
      heartbeat: { every: 'off' },
      retry: { maxAttempts: 2, baseDelayMs: 50, maxDelayMs: 100 },
    },
    agents: { defaults: { runner: agentRunner(path.join(temp.dir, 'record.jsonl')) } },
  };
  let server = await startTestServer(config, { runtime: true, dataDir: temp.dir });
  try {
    const res = await server.post('agent', {
      message: 'hello',
      channel: 'telegram',
      to: '123456789',
      deliver: true,
    });
    const { runId } = (await res.json()) as { runId: string };
    await waitFor('the send in flight', () => standIn.requests.length === 1);
    await server.stop();
    hang = false;
    server = await startTestServer(config, { runtime: true, dataDir: temp.dir });
    const row = await waitForFinal(temp.dir, runId, 20_000);
    // Two real sends after the restart (both 502), as maxAttempts 2 allows.
    expect(standIn.requests.length - 1).toBe(2);
    expect(row.state).toBe('dead');
  } finally {
    await server.stop();
    await standIn.close();
  }
}, 60_000);
