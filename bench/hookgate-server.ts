/**
 * Starting hookgate for one benchmark target the way the service runs:
 * resolveConfig + startHookgate on 127.0.0.1, the real SQLite store in the
 * target's data directory (or a PostgreSQL database with the default pool
 * settings, or, for the diagnostic row, an in-memory one),
 * a silent logger or an info logger writing JSON lines to a file, and for
 * the mapped and transform targets their mappings (transform modules are
 * written into the transforms root first, so the boot loads them). With the
 * runtime on (as `hookgate serve` runs) the agents' runner is an http runner
 * to the bench's own agent, which answers at once.
 */
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';
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
    // All load comes from one address here: the per-address cap must not cut the bench's connections.
    server: { host: '127.0.0.1', port: 0, maxConnectionsPerAddress: 10_000 },
    hooks: {
      enabled: true,
      token: TOKEN,
      ...(spec.maxFailures !== undefined && { authRateLimit: { maxFailures: spec.maxFailures } }),
      ...spec.hooks,
    },
    runtime: { commitDelayMs: spec.commitDelayMs },
    ...(spec.agentUrl !== undefined && {
      agents: { defaults: { runner: { kind: 'http', url: spec.agentUrl } } },
    }),
    log: { level: spec.logFile ? 'info' : 'silent' },
    ...(spec.postgresUrl !== undefined && { store: { kind: 'postgres', url: spec.postgresUrl } }),
  };
  const loaded = resolveConfig(raw, { baseDir: spec.dataDir, dataDir: spec.dataDir, env: {} });
  // Without a config file the transforms root is <dataDir>/hooks/transforms.
  for (const [name, source] of Object.entries(spec.transformFiles ?? {})) {
    const file = path.join(loaded.transformsRoot, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, source);
  }
  const logger = spec.logFile
    ? createLogger('info', openSync(spec.logFile, 'a'))
    : createLogger('silent');
  const hookgate = await startHookgate(loaded, {
    logger,
    runtime: spec.runtime,
    ...(spec.memoryStore && { store: createMemoryStore() }),
  });
  return hookgate.url;
}
