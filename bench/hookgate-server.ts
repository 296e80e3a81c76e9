/**
 * Starting hookgate for one benchmark target the way the service runs:
 * resolveConfig + startHookgate on 127.0.0.1, the real SQLite store in the
 * target's data directory (or, for the diagnostic row, an in-memory one),
 * and a silent logger or an info logger writing JSON lines to a file.
 */
import { openSync } from 'node:fs';
import { resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { createMemoryStore } from './memory-store.ts';
import { type ServerSpec, TOKEN } from './targets.ts';

/** Start hookgate as `spec` describes; resolves with its URL. */
export async function startHookgateServer(
  spec: Extract<ServerSpec, { kind: 'hookgate' }>,
): Promise<string> {
  const raw = {
    server: { host: '127.0.0.1', port: 0 },
    hooks: {
      enabled: true,
      token: TOKEN,
      ...(spec.maxFailures !== undefined && { authRateLimit: { maxFailures: spec.maxFailures } }),
    },
    runtime: { commitDelayMs: spec.commitDelayMs },
    log: { level: spec.logFile ? 'info' : 'silent' },
  };
  const loaded = resolveConfig(raw, { baseDir: spec.dataDir, dataDir: spec.dataDir, env: {} });
  const logger = spec.logFile
    ? createLogger('info', openSync(spec.logFile, 'a'))
    : createLogger('silent');
  const hookgate = await startHookgate(loaded, {
    logger,
    ...(spec.memoryStore && { store: createMemoryStore() }),
  });
  return hookgate.url;
}
