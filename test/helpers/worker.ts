/**
 * The action worker as the runtime builds it, for tests below the server:
 * one agent (`main`) whose runner the test gives, no channels, no
 * heartbeat, retries ten minutes apart (a retried run does not come back
 * during a test), a silent log.
 */
import pino from 'pino';
import type { ChannelAdapter } from '../../engine/delivery/adapter.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from '../../engine/runtime/prompt-budget.ts';
import type { Runner } from '../../engine/runtime/runners/runner.ts';
import type { RuntimeStore } from '../../engine/runtime/runtime-store.ts';
import { createActionWorker } from '../../engine/runtime/worker.ts';
import { NO_HEARTBEAT } from './heartbeat.ts';

export function testWorker(
  store: RuntimeStore,
  runner: Runner,
  options: {
    workspace: string;
    concurrency: number;
    pollMs: number;
    onRequest?: (kind: string, seq: number) => void;
    /** Default: retries ten minutes apart. */
    retry?: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    adapters?: ReadonlyMap<string, ChannelAdapter>;
  },
) {
  return createActionWorker({
    store,
    agents: new Map([
      [
        'main',
        { id: 'main', runner, workspace: options.workspace, model: undefined, timeoutSeconds: 60 },
      ],
    ]),
    adapters: options.adapters ?? new Map(),
    heartbeat: NO_HEARTBEAT,
    settings: {
      mainKey: 'main',
      concurrency: options.concurrency,
      ackToken: 'HEARTBEAT_OK',
      retry: options.retry ?? { maxAttempts: 5, baseDelayMs: 600_000, maxDelayMs: 600_000 },
      defaultAgentId: 'main',
      pollMs: options.pollMs,
      historyTurns: 10,
      maxPromptBytes: DEFAULT_MAX_PROMPT_BYTES,
      lastRoute: { pinned: false, ownerRoutes: [] },
    },
    logger: pino({ level: 'silent' }),
    controller: new AbortController(),
    ...(options.onRequest && { onRequest: options.onRequest }),
  });
}
