/**
 * A guesser who keeps sending wrong tokens while the shared database is down: the failures
 * cannot be written to the shared count, yet the address must still be locked after
 * `maxFailures` (spec: repeated failures are rate-limited). While the database is down a right
 * token is answered 503 and a wrong one 401, so without a lock the outage would be an unlimited
 * oracle. The instance counts the failures the store refused itself, and keeps that lock (a
 * right token included) after the database is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/runtime.ts';

const skip = skipPostgres();

describe.skipIf(skip)('wrong tokens while the shared database is down', () => {
  let server: PostgresServer;
  let instance: Hookgate | undefined;
  const temp = tempDir('hookgate-pg-outage-guess-');

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: {
        enabled: true,
        token: TOKEN,
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
      },
      store: { kind: 'postgres', url },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    instance = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  }, 180_000);

  afterAll(async () => {
    await instance?.close();
    await server?.stop();
    temp.cleanup();
  }, 90_000);

  const wake = (token: string) =>
    fetch(`${instance?.url}/hooks/wake`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ text: 'ping' }),
    });

  it('still lock the address after maxFailures, on the instance they reach', async () => {
    expect((await wake(TOKEN)).status).toBe(200);
    server.crash();
    await waitFor('the store to be unreachable', async () => (await wake(TOKEN)).status === 503);

    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await wake('wrong-token-0123456789')).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const refused = await wake(TOKEN);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: string } };
    expect(body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(50);

    // The database back: the lock stands (nothing lifts a lock early), also for the right token.
    await server.restart();
    expect((await wake(TOKEN)).status).toBe(429);
  }, 180_000);
});
