/**
 * Attack: the agent's endpoint reads a run, then its connection breaks
 * before any answer (a crash or a proxy reset mid-turn). The turn may have
 * run there; its reply never came, so it is run again, but the retry was
 * indistinguishable from new work and the reason said "unreachable". The
 * reason now says the turn may have run, and every attempt carries the
 * run's id as `Idempotency-Key`, so an endpoint can answer a retry from
 * what it already did.
 */
import { afterEach, expect, it } from 'vitest';
import { startWorld, type World } from './helpers/main-session.ts';
import { waitForRun } from './helpers/store-reads.ts';

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) await world.close();
});

it('a run whose connection broke after it was sent is retried with the same Idempotency-Key', async () => {
  let calls = 0;
  const w = await startWorld({
    runner: (run) => {
      if (run.kind !== 'agent') return { body: { reply: 'HEARTBEAT_OK' } };
      calls += 1;
      return calls === 1 ? { drop: true } : { body: { reply: `done: ${run.runId}` } };
    },
  });
  worlds.push(w);
  const json = await w.post('agent', { message: 'deploy the fix', wakeMode: 'next-heartbeat' });
  const id = String(json['runId']);
  const run = await waitForRun(w.server, id, 30_000);
  expect(run.state).toBe('done');
  const attempts = w.stub.exchanges.filter((exchange) => exchange.body['kind'] === 'agent');
  expect(attempts).toHaveLength(2);
  for (const attempt of attempts) {
    expect(attempt.body['runId']).toBe(id);
    expect(attempt.headers['idempotency-key']).toBe(id);
  }
});
