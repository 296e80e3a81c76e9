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
  let frozen = false;
  const temp = tempDir('hookgate-pg-outage-guess-');

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const raw = {
      hooks: {
        enabled: true,
        token: TOKEN,
        authRateLimit: { maxFailures: 3, windowSeconds: 60, lockoutSeconds: 60 },
      },
      server: { host: '127.0.0.1', port: 0, trustedProxies: ['127.0.0.1'] },
      store: { kind: 'postgres', url },
    };
    const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
    instance = await startHookgate(loaded, { logger: createLogger('silent'), runtime: false });
  }, 180_000);

  afterAll(async () => {
    if (frozen) server.signalAll('SIGCONT');
    await instance?.close();
    await server?.stop();
    temp.cleanup();
  }, 90_000);

  const wake = (token: string, from = '198.51.100.1') =>
    fetch(`${instance?.url}/hooks/wake`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        // The instance trusts loopback as a proxy: each case guesses from an address of its own.
        'x-forwarded-for': from,
      },
      body: JSON.stringify({ text: 'ping' }),
      signal: AbortSignal.timeout(30_000),
    });

  it('a database that stops answering holds no refusal: counted here after 2 s, then locked', async () => {
    const from = '198.51.100.2';
    // Warm: the counts' connection is open, as it is on an instance that refused before.
    expect((await wake('wrong-token-0123456789', from)).status).toBe(401);
    server.signalAll('SIGSTOP');
    frozen = true;
    const answers: Array<{ status: number; ms: number }> = [];
    try {
      for (let i = 0; i < 4; i++) {
        const started = Date.now();
        const res = await wake('wrong-token-0123456789', from);
        answers.push({ status: res.status, ms: Date.now() - started });
      }
    } finally {
      server.signalAll('SIGCONT');
      frozen = false;
    }
    // Each failure waits out its count, then is counted here (the warm one is the database's):
    // the fourth is refused, the address locked.
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 429]);
    for (const answer of answers) expect(answer.ms).toBeLessThan(10_000);
  }, 120_000);

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
