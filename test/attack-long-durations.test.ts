/**
 * Attack: durations an operator may configure that are longer than a
 * Node timer can wait (2^31-1 ms, about 24.8 days). Node fires such a timer
 * at once, so "rarely" became "at once": a heartbeat every 30 days ran
 * back to back, each an agent turn, and a command run allowed 30 days timed
 * out before its runner could answer.
 */
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { agentRunner, killAgentGroups, readRecords } from './helpers/runtime.ts';
import { heartbeatsOf, waitForRun } from './helpers/store-reads.ts';

const THIRTY_DAYS_S = 30 * 24 * 60 * 60;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function boot(
  every: string,
  timeoutSeconds: number,
): Promise<{ server: TestServer; record: string }> {
  const { dir, cleanup } = tempDir('hookgate-long-');
  const record = path.join(dir, 'agent.jsonl');
  const server = await startTestServer(
    {
      hooks: { maxTimeoutSeconds: THIRTY_DAYS_S },
      agents: { defaults: { timeoutSeconds, runner: agentRunner(record) }, list: [{ id: 'main' }] },
      runtime: { heartbeat: { every } },
    },
    { runtime: true },
  );
  cleanups.push(async () => {
    await server.stop();
    killAgentGroups(readRecords(record));
    cleanup();
  });
  return { server, record };
}

async function runAgent(server: TestServer, body: Record<string, unknown>): Promise<string> {
  const response = await server.post('agent', {
    name: 'Long',
    wakeMode: 'next-heartbeat',
    ...body,
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { runId: string }).runId;
}

it('a heartbeat every 30 days does not run at once, nor over and over', async () => {
  const { server } = await boot('30d', 30);
  // A run of its own gives the schedule time to misfire (each misfire is a heartbeat turn).
  const id = await runAgent(server, { message: 'hello' });
  await waitForRun(server, id);
  await waitForRun(server, await runAgent(server, { message: 'again' }));
  expect(await heartbeatsOf(server)).toEqual([]);
});

it('a command run allowed 30 days is not timed out before its runner answers', async () => {
  const { server } = await boot('off', THIRTY_DAYS_S);
  const id = await runAgent(server, { message: 'hello' });
  const row = await waitForRun(server, id);
  expect(row.outcome).toMatchObject({ status: 'ok', reply: 'done: hello' });
  const fromRequest = await runAgent(server, { message: 'hi', timeoutSeconds: THIRTY_DAYS_S });
  const second = await waitForRun(server, fromRequest);
  expect(second.outcome).toMatchObject({ status: 'ok', reply: 'done: hi' });
});
