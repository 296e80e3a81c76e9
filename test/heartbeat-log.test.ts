/**
 * Heartbeat failures are visible in the log (a warning with the reason), not
 * only in the store: no runner, and a reply that could not be delivered.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { testHeartbeat } from './helpers/heartbeat.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function beatOnce(runner: Runner | undefined): Promise<Array<Record<string, unknown>>> {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const { heartbeat, close } = testHeartbeat({ runner, logger, maxEvents: 10 });
  cleanups.push(close);
  heartbeat.requestNow('requested');
  await heartbeat.idle();
  return lines;
}

describe('heartbeat failures in the log', () => {
  it('a heartbeat without a runner logs a warning with the reason', async () => {
    const lines = await beatOnce(undefined);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'heartbeat failed',
        reason: 'no runner is configured for agent "main"',
      }),
    );
  });

  it('a heartbeat reply that cannot be delivered logs a warning with the reason', async () => {
    const runner: Runner = { run: async () => ({ status: 'ok', reply: 'Something happened.' }) };
    const lines = await beatOnce(runner);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 40,
        msg: 'heartbeat delivery skipped',
        reason: expect.stringContaining('no last route'),
      }),
    );
  });
});
