/**
 * A failed run's summary keeps its reason as the README says: up to 500
 * characters (a reply keeps 280). The command runner's reason is the tail of
 * its stderr, up to 500 characters, whose end is where the error is; cut at
 * 280 from its start, the summary the next heartbeat reads lost that end.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { summaryLine } from '../engine/runtime/replies.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';
import { NODE } from './helpers/runtime.ts';
import { summariesOf, waitForRun } from './helpers/store-reads.ts';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

// Reads its stdin, then fails with a long stderr whose last words say what went wrong.
const FAILING_AGENT = [
  "process.stdin.resume();process.stdin.on('end',()=>{",
  "process.stderr.write('progress '.repeat(45)+'FATAL: the API key was revoked');",
  'process.exit(1);});',
].join('');

describe("a failed run's summary", () => {
  it('keeps an error reason of up to 500 characters, its end included', async () => {
    const server = await startTestServer(
      {
        agents: {
          defaults: { runner: { kind: 'command', argv: [NODE, '-e', FAILING_AGENT] } },
          list: [{ id: 'main', default: true }],
        },
        runtime: { heartbeat: { every: 'off' } },
      },
      { runtime: true },
    );
    servers.push(server);
    const res = await server.post('agent', {
      message: 'build it',
      name: 'Build',
      deliver: false,
      wakeMode: 'next-heartbeat',
    });
    expect(res.status).toBe(200);
    const runId = String(((await res.json()) as { runId: string }).runId);
    const row = await waitForRun(server, runId);
    const reason = row.outcome?.reason ?? '';
    expect(row.state).toBe('failed');
    expect(reason.length).toBeGreaterThan(280);
    expect(reason.length).toBeLessThanOrEqual(500);
    expect(reason.endsWith('FATAL: the API key was revoked')).toBe(true);
    expect(await summariesOf(server, runId)).toEqual([`Hook Build (error): ${reason}`]);
  });

  it.each(['error', 'timeout'] as const)(
    'cuts a %s reason at 500 characters, a reply at 280',
    (status) => {
      const text = 'y'.repeat(1000);
      expect(summaryLine('Job', { status, text })).toBe(
        `Hook Job (${status}): ${'y'.repeat(499)}…`,
      );
      expect(summaryLine('Job', { status, text: 'z'.repeat(500) })).toBe(
        `Hook Job (${status}): ${'z'.repeat(500)}`,
      );
      expect(summaryLine('Job', { status: 'ok', text })).toBe(`Hook Job: ${'y'.repeat(279)}…`);
    },
  );
});
