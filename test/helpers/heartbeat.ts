/**
 * A heartbeat on its own, over a real SQLite runtime store in a temporary
 * directory, for tests of the heartbeat's rules: the default agent `main`
 * with the given runner, the schedule off (runs only when asked), one
 * delivery attempt, no channels.
 */
import type { Logger } from '../../engine/log.ts';
import { createHeartbeat, type Heartbeat } from '../../engine/runtime/heartbeat.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from '../../engine/runtime/prompt-budget.ts';
import type { Runner } from '../../engine/runtime/runners/runner.ts';
import { SqliteRuntimeStore } from '../../engine/store/sqlite/runtime-store.ts';
import { tempDir } from './hookgate.ts';

export type TestHeartbeat = {
  heartbeat: Heartbeat;
  store: SqliteRuntimeStore;
  /** The store's data directory. */
  dir: string;
  close(): void;
};

/** Start a heartbeat over a fresh store; `close` closes the store and removes the directory. */
export function testHeartbeat(options: {
  runner: Runner | undefined;
  logger: Logger;
  /** Most events one heartbeat includes. */
  maxEvents: number;
  /** Most bytes of message and history a heartbeat sends (default: runtime.maxPromptBytes's default). */
  maxPromptBytes?: number;
  /** The coalescing window (default 0: a heartbeat asked for starts at once). */
  coalesceMs?: number;
  signal?: AbortSignal;
  /** Whether this instance leads (default: always), and where it hands requests when not. */
  leading?: () => boolean;
  forward?: (reason: string) => void;
  /** The retry policy (default: one attempt, no retry). */
  retry?: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
}): TestHeartbeat {
  const temp = tempDir();
  const store = SqliteRuntimeStore.open(temp.dir);
  const { runner } = options;
  const heartbeat = createHeartbeat({
    store,
    agent: () => ({ id: 'main', runner, workspace: temp.dir, model: undefined, timeoutSeconds: 5 }),
    adapters: new Map(),
    settings: {
      mainKey: 'main',
      prompt: 'Anything to do?',
      ackToken: 'HEARTBEAT_OK',
      coalesceMs: options.coalesceMs ?? 0,
      schedule: { kind: 'off' },
      maxEvents: options.maxEvents,
      maxPromptBytes: options.maxPromptBytes ?? DEFAULT_MAX_PROMPT_BYTES,
      retry: options.retry ?? { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
      lastRoute: { pinned: false, ownerRoutes: [] },
      leaseMs: 30_000,
    },
    logger: options.logger,
    signal: options.signal ?? new AbortController().signal,
    ...(options.leading && { leading: options.leading }),
    ...(options.forward && { forward: options.forward }),
  });
  return {
    heartbeat,
    store,
    dir: temp.dir,
    close() {
      store.close();
      temp.cleanup();
    },
  };
}

/** A heartbeat that does nothing, for tests of the steps that only tell it something happened. */
export const NO_HEARTBEAT: Heartbeat = Object.freeze({
  requestNow: () => undefined,
  requestFor: () => undefined,
  start: () => undefined,
  stop: async () => undefined,
  idle: async () => undefined,
  ownRecords: async () => [],
  sweepDeliveries: async () => undefined,
});
