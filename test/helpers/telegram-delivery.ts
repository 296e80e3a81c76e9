/**
 * One agent run whose reply goes to a Telegram stand-in at `baseUrl`, through a real hookgate
 * with the runtime on and an agent that answers at once: what the attacks on a channel's answer
 * share. Resolves with the run once it is final.
 */
import { expect } from 'vitest';
import { startTestServer } from './hookgate.ts';
import { startStub } from './runtime.ts';
import { waitForRun } from './store-reads.ts';

export type TelegramDelivery = {
  baseUrl: string;
  /** The reply the agent gives, sent to the chat. */
  reply: string;
  timeoutMs: number;
  maxAttempts: number;
  /** How long to wait for the run to be final. */
  waitMs: number;
  /** Where the stand-ins' closes are put, for the test's afterEach. */
  cleanups: Array<() => Promise<void> | void>;
};

export async function deliverToTelegram(options: TelegramDelivery) {
  const { baseUrl, reply, timeoutMs, maxAttempts, waitMs, cleanups } = options;
  const agent = await startStub(() => ({ body: { reply } }));
  cleanups.push(() => agent.close());
  const server = await startTestServer(
    {
      channels: { telegram: { botToken: '123456:tg-secret', baseUrl, timeoutMs } },
      runtime: {
        heartbeat: { every: 'off' },
        retry: { maxAttempts, baseDelayMs: 20, maxDelayMs: 100 },
      },
      agents: { defaults: { runner: { kind: 'http', url: `${agent.url}/run` } } },
    },
    { runtime: true },
  );
  cleanups.push(() => server.stop());
  const res = await server.post('agent', {
    message: 'summarise this',
    channel: 'telegram',
    to: '123456789',
  });
  expect(res.status).toBe(200);
  const { runId } = (await res.json()) as { runId: string };
  return waitForRun(server, runId, waitMs);
}
