/**
 * Heartbeat failures are visible in the log (a warning with the reason), not
 * only in the store: no runner, and a reply that could not be delivered.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createHeartbeat } from '../engine/runtime/heartbeat.ts';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './helpers/hookgate.ts';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function beatOnce(runner: Runner | undefined): Promise<Array<Record<string, unknown>>> {
  const temp = tempDir();
  const store = SqliteRuntimeStore.open(temp.dir);
  cleanups.push(() => {
    store.close();
    temp.cleanup();
  });
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const heartbeat = createHeartbeat({
    store,
    agent: () => ({ id: 'main', runner, workspace: temp.dir, model: undefined, timeoutSeconds: 5 }),
    adapters: new Map(),
    settings: {
      mainKey: 'main',
      prompt: 'Anything to do?',
      ackToken: 'HEARTBEAT_OK',
      schedule: { kind: 'off' },
      maxEvents: 10,
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      lastRoute: { pinned: false, ownerRoutes: [] },
    },
    logger,
    signal: new AbortController().signal,
  });
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
