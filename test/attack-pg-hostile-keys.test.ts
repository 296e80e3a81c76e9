/**
 * Attack on the PostgreSQL store with hostile idempotency keys: a caller's key is any text of
 * 1-256 characters, NUL included (SQLite stores it). A text column refuses NUL, so the key's
 * look-up and its insert failed: the request was answered 503 ("nothing was accepted", retry)
 * every time, however often the caller retried. And two keys that differ only where
 * PostgreSQL cannot tell them apart (lone surrogates, which UTF-8 cannot carry, or NUL once
 * stored as its replacement) sent side by side landed in one batch as two rows for one key:
 * the statement failed, and every other caller's request in that batch with it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
import { type Hookgate, startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import type { NewIdempotencyRecord } from '../engine/queue/action-store.ts';
import { openPostgresStore } from '../engine/store/postgres/action-store.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { type PostgresServer, skipPostgres, startPostgres } from './helpers/postgres.ts';
import { sampleAction } from './store-contract.ts';

const skip = skipPostgres();

describe.skipIf(skip)('attack: hostile idempotency keys on PostgreSQL', () => {
  let server: PostgresServer;
  const instances: Hookgate[] = [];
  const temp = tempDir('hookgate-pg-keys-');

  beforeAll(async () => {
    server = await startPostgres();
    const url = await server.createDatabase();
    const raw = {
      server: { host: '127.0.0.1', port: 0 },
      hooks: { enabled: true, token: TOKEN },
      store: { kind: 'postgres', url },
    };
    for (let i = 0; i < 2; i++) {
      const loaded = resolveConfig(raw, { baseDir: temp.dir, dataDir: temp.dir, env: {} });
      instances.push(
        await startHookgate(loaded, { logger: createLogger('silent'), runtime: false }),
      );
    }
  }, 180_000);

  afterAll(async () => {
    for (const instance of instances.splice(0)) await instance.close();
    await server?.stop();
    temp.cleanup();
  });

  const post = (instance: Hookgate | undefined, body: unknown) =>
    fetch(`${instance?.url}/hooks/agent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(body),
    });

  it('a key holding NUL is stored once and its repeat on another instance gets the first answer', async () => {
    const body = { message: 'deploy', idempotencyKey: 'order\u000078' };
    const first = await post(instances[0], body);
    expect(first.status).toBe(200);
    const again = await post(instances[1], body);
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(await first.text());
    // The same key for another request is a conflict, not a second action.
    expect((await post(instances[1], { ...body, message: 'other' })).status).toBe(409);
    const stored = await instances[0]?.store.listActions({ limit: 10 });
    expect(stored).toHaveLength(1);
  });

  it("two keys PostgreSQL stores alike, sent side by side, fail no other caller's request", async () => {
    const store = await openPostgresStore({ url: await server.createDatabase(), poolSize: 2 });
    const key = (text: string, actionId: string): NewIdempotencyRecord => ({
      key: `caller:${text}`,
      fingerprint: `fp-${actionId}`,
      actionId,
      response: `{"id":"${actionId}"}`,
      createdAtMs: Date.now(),
      notBeforeMs: 0,
    });
    try {
      for (const [one, two] of [
        ['x\ud800', 'x\ud801'],
        ['y\u0000', 'y\ufffd'],
      ] as const) {
        const [a, b, innocent] = [sampleAction(), sampleAction(), sampleAction()];
        // One event-loop turn: one batch.
        const outcomes = await Promise.allSettled([
          store.appendOrGet({ actions: [a], idempotency: [key(one, a.id)] }),
          store.appendOrGet({ actions: [b], idempotency: [key(two, b.id)] }),
          store.appendOrGet({ actions: [innocent], idempotency: [key(`own-${one}`, innocent.id)] }),
        ]);
        expect(outcomes.map((outcome) => outcome.status)).toEqual([
          'fulfilled',
          'fulfilled',
          'fulfilled',
        ]);
        const values = outcomes.map(
          (outcome) => (outcome as PromiseFulfilledResult<unknown>).value,
        );
        expect(values[2]).toEqual({ stored: true });
        // The two keys are one key to the store: one stored, the other answered with its record.
        expect(values.slice(0, 2).filter((v) => (v as { stored: boolean }).stored)).toHaveLength(1);
      }
      expect(await store.listActions({ limit: 10 })).toHaveLength(4);
    } finally {
      await store.close();
    }
  });
});
