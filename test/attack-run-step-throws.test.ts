/**
 * Attack: a run whose step throws (a runner, an adapter or any code on the
 * way that meets input no check foresaw; a store write that fails). The
 * throw used to be logged as "action crashed" and nothing more: the run
 * stayed `running`, and every later run of its session stayed queued behind
 * it until a restart, which ran it into the same throw. Now it is a counted
 * attempt: tried again with the usual backoff, keeping the progress it saved
 * (a reply being delivered, the parts sent), and dead once the attempts are
 * spent, with its summary in the main session; the session goes on. The
 * real worker over the real SQLite store.
 */
import { afterEach, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import type { Runner } from '../engine/runtime/runners/runner.ts';
import type { RuntimeStore } from '../engine/runtime/runtime-store.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { testWorker } from './helpers/worker.ts';
import { agentAction } from './runtime-store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const QUICK = { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 };

it('a run that throws every time is tried again, then ends dead with its summary; the next run of its session runs', async () => {
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
    retry: QUICK,
  });
  cleanups.push(async () => {
    await worker.stop();
    await stores.close();
  });
  const boom = agentAction('hook:inbox', 'BOOM');
  const next = agentAction('hook:inbox', 'after');
  await stores.accept([boom, next]);
  await worker.start();
  while ((await stores.runtime.run(next.id))?.state !== 'done')
    await new Promise((resolve) => setTimeout(resolve, 10));
  expect(started).toEqual(['wrapped: BOOM', 'wrapped: BOOM', 'wrapped: after']);
  const dead = await stores.runtime.run(boom.id);
  expect(dead?.state).toBe('dead');
  expect(dead?.outcome?.reason).toBe(
    'gave up after 2 attempts: hookgate error while running it (URIError)',
  );
  expect(JSON.stringify(dead)).not.toContain('sekrit');
  const summaries = (await stores.runtime.events('main', 10)).filter(
    (event) => event.actionId === boom.id,
  );
  expect(summaries).toHaveLength(1);
  expect(summaries[0]?.text).toContain('URIError');
});

it('a store write that throws mid-delivery keeps the reply and the parts sent: the next attempt sends the rest', async () => {
  const stores = await openSqliteStores('hookgate-run-throws-progress-');
  const sent: string[] = [];
  const adapter: ChannelAdapter = {
    id: 'telegram',
    maxLength: 20,
    checkRecipient: () => null,
    send: async (_to, text) => {
      sent.push(text);
      return { status: 'sent' };
    },
  };
  let turns = 0;
  const runner: Runner = {
    run: async () => {
      turns++;
      return { status: 'ok', reply: 'part one is here.\n\npart two is here.\n\npart three.' };
    },
  };
  let thrown = false;
  // The real store, its progress write after the second part failing once (a busy disk).
  const store = new Proxy(stores.runtime, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key !== 'saveOutcome') return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: Parameters<RuntimeStore['saveOutcome']>) => {
        if (sent.length === 2 && !thrown) {
          thrown = true;
          throw new Error('SQLITE_BUSY: database is locked');
        }
        return target.saveOutcome(...args);
      };
    },
  }) as RuntimeStore;
  const worker = testWorker(store, runner, {
    workspace: stores.dir,
    concurrency: 1,
    pollMs: 60_000,
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 },
    adapters: new Map([['telegram', adapter]]),
  });
  cleanups.push(async () => {
    await worker.stop();
    await stores.close();
  });
  const action = {
    ...agentAction('hook:inbox', 'go'),
    deliver: true,
    channel: 'telegram',
    to: '42',
  };
  await stores.accept([action]);
  await worker.start();
  while (!['done', 'failed', 'dead'].includes((await stores.runtime.run(action.id))?.state ?? ''))
    await new Promise((resolve) => setTimeout(resolve, 10));
  const run = await stores.runtime.run(action.id);
  expect(run?.state).toBe('done');
  const delivery = run?.outcome?.delivery;
  expect(delivery?.state).toBe('sent');
  expect(delivery?.partsSent).toBe(delivery?.parts);
  // One turn; only the part whose progress was not saved went twice.
  expect(turns).toBe(1);
  expect(sent).toHaveLength((delivery?.parts ?? 0) + 1);
  expect(sent[2]).toBe(sent[1]);
});

it('a store that fails the progress write and then every read leaves the run as it was: the next start resumes its delivery', async () => {
  const stores = await openSqliteStores('hookgate-run-throws-unread-');
  const sent: string[] = [];
  const adapter: ChannelAdapter = {
    id: 'telegram',
    maxLength: 20,
    checkRecipient: () => null,
    send: async (_to, text) => {
      sent.push(text);
      return { status: 'sent' };
    },
  };
  let turns = 0;
  const runner: Runner = {
    run: async () => {
      turns++;
      return { status: 'ok', reply: 'part one is here.\n\npart two is here.\n\npart three.' };
    },
  };
  let busy = 0;
  // The same busy spell fails the progress write after the second part, then every try of the
  // read that would tell what the run had saved.
  const store = new Proxy(stores.runtime, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key === 'saveOutcome')
        return async (...args: Parameters<RuntimeStore['saveOutcome']>) => {
          if (sent.length === 2 && busy === 0) {
            busy = 1;
            throw new Error('SQLITE_BUSY: database is locked');
          }
          return target.saveOutcome(...args);
        };
      if (key === 'run')
        return async (...args: Parameters<RuntimeStore['run']>) => {
          // Every try of the read (three), then the store answers again.
          if (busy >= 1 && busy < 4) {
            busy++;
            throw new Error('SQLITE_BUSY: database is locked');
          }
          return target.run(...args);
        };
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as RuntimeStore;
  const settings = {
    workspace: stores.dir,
    concurrency: 1,
    pollMs: 60_000,
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 },
    adapters: new Map([['telegram', adapter]]),
  };
  const first = testWorker(store, runner, settings);
  const action = {
    ...agentAction('hook:inbox', 'go'),
    deliver: true,
    channel: 'telegram',
    to: '42',
  };
  await stores.accept([action]);
  await first.start();
  while (busy < 4) await new Promise((resolve) => setTimeout(resolve, 10));
  await first.idle();
  await first.stop();
  // Nothing written over what it had saved: still running, its reply and first part kept.
  const left = await stores.runtime.run(action.id);
  expect(left?.state).toBe('running');
  expect(left?.outcome).toMatchObject({ status: 'delivering', delivery: { partsSent: 1 } });
  // The next start takes it over and delivers the rest, without a second turn.
  const second = testWorker(stores.runtime, runner, settings);
  cleanups.push(async () => {
    await second.stop();
    await stores.close();
  });
  await second.start();
  while ((await stores.runtime.run(action.id))?.state !== 'done')
    await new Promise((resolve) => setTimeout(resolve, 10));
  const run = await stores.runtime.run(action.id);
  expect(turns).toBe(1);
  expect(run?.outcome?.delivery?.partsSent).toBe(run?.outcome?.delivery?.parts);
  expect(sent).toHaveLength((run?.outcome?.delivery?.parts ?? 0) + 1);
});
