/**
 * Real `serve` processes (node server.ts serve --config FILE --port 0) sharing one throwaway
 * PostgreSQL database, each with its own data directory (as instances on different hosts
 * would have), running the recording test agent.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { LISTENING, type RunningServer, spawnHookgate } from './process.ts';
import { agentRunner } from './runtime.ts';

export const INSTANCE_TOKEN = 'pg-instances-token-0123456789';

export type PgInstance = RunningServer & { config: string; dataDir: string };

/** Write one instance's config (own dataDir) and return its path. */
export function writeInstanceConfig(
  dir: string,
  name: string,
  url: string,
  extra: {
    hooks?: Record<string, unknown>;
    store?: Record<string, unknown>;
    runtime?: Record<string, unknown>;
  } = {},
): { config: string; dataDir: string; record: string } {
  const dataDir = path.join(dir, name);
  mkdirSync(dataDir, { recursive: true });
  const record = path.join(dir, 'agent.jsonl');
  const config = path.join(dataDir, 'hookgate.json');
  writeFileSync(
    config,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: INSTANCE_TOKEN,
        allowRequestSessionKey: true,
        allowedSessionKeyPrefixes: ['hook:'],
        ...extra.hooks,
      },
      store: { kind: 'postgres', url, ...extra.store },
      runtime: { dataDir, ...extra.runtime },
      agents: { defaults: { runner: agentRunner(record) } },
    }),
  );
  return { config, dataDir, record };
}

/** Start `serve --config <config> --port 0` and wait for its listening line. */
export async function startInstance(config: string, dataDir: string): Promise<PgInstance> {
  const proc = spawnHookgate(['serve', '--config', config, '--port', '0']);
  const match = await proc.waitForStdout(LISTENING, 90_000);
  return { ...proc, url: match[1] as string, port: Number(match[2]), config, dataDir };
}

/** POST JSON to an instance's hook with a token (the right one unless given). */
export function postTo(
  instance: { url: string },
  name: string,
  body: unknown,
  options: { token?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return fetch(`${instance.url}/hooks/${name}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${options.token ?? INSTANCE_TOKEN}`,
      ...options.headers,
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
}
