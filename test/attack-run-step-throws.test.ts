/**
 * Attack: a run whose step throws (a runner, an adapter or any code on the
 * way that meets input no check foresaw). The throw used to be logged as
 * "action crashed" and nothing more: the run stayed `running`, and every
 * later run of its session stayed queued behind it until a restart, which
 * ran it into the same throw. Now it ends failed, with its summary in the
 * main session, and the session goes on. The real worker over the real
 * SQLite store.
 */
import { afterEach, expect, it } from 'vitest';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { testWorker } from './helpers/worker.ts';
import { agentAction } from './runtime-store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a run that throws ends failed with its summary, and the next run of its session runs', async () => {
  const stores = await openSqliteStores('hookgate-run-throws-');
  const started: string[] = [];
  const runner: Runner = {
    run(run) {
      started.push(run.message);
      // A URL with a credential in the error's text: it must not reach the run's record.
      if (run.message.includes('BOOM'))
        throw new URIError('URI malformed at https://bot:sekrit@example.test/');
      return Promise.resolve({ status: 'ok', reply: 'fine' });
    },
  };
  const worker = testWorker(stores.runtime, runner, {
    workspace: stores.dir,
    concurrency: 2,
    pollMs: 60_000,
  });
  cleanups.push(async () => {
    await worker.stop();
    await stores.close();
  });
  const boom = agentAction('hook:inbox', 'BOOM');
  const next = agentAction('hook:inbox', 'after');
  await stores.accept([boom, next]);
  await worker.start();
  await worker.idle();
  expect(started).toEqual(['wrapped: BOOM', 'wrapped: after']);
  const failed = await stores.runtime.run(boom.id);
  expect(failed?.state).toBe('failed');
  expect(failed?.outcome?.reason).toContain('hookgate error while running it (URIError)');
  expect(JSON.stringify(failed)).not.toContain('sekrit');
  expect((await stores.runtime.run(next.id))?.state).toBe('done');
  const summaries = (await stores.runtime.events('main', 10)).filter(
    (event) => event.actionId === boom.id,
  );
  expect(summaries).toHaveLength(1);
  expect(summaries[0]?.text).toContain('URIError');
});
