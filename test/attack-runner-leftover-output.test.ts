/**
 * Attack: a command runner that answers and exits 0, leaving a child behind
 * that still holds its stdout or stderr (a daemon it started, a `sleep &`,
 * a tool's background helper). hookgate waited for the output to close, so
 * the answered turn ran into `timeoutSeconds`, ended `failed` as a timeout
 * and its reply was lost, its session held all that time. Once the runner
 * has exited, what it wrote is read and the turn ends with its exit; the
 * leftover lives on, as one that let go of the output always did.
 */
import { readFileSync, writeFileSync, chmodSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, tempDir } from './helpers/hookgate.ts';
import { isRunning, waitFor } from './helpers/runtime.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { summariesOf, waitForRun } from './helpers/store-reads.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// The leftover's redirections: which of the runner's outputs it keeps open.
const LEFTOVERS = [
  ['stdout', '2>/dev/null'],
  ['stderr', '>/dev/null'],
  ['stdout and stderr', ''],
] as const;

/** Write `lines` as an executable runner script in `dir`; its path. */
function runnerScript(dir: string, lines: readonly string[]): string {
  const runner = path.join(dir, 'runner.sh');
  writeFileSync(runner, lines.join('\n'));
  chmodSync(runner, 0o755);
  return runner;
}

/** Kill, after the test, the leftover processes whose pids the runner wrote to `pids`. */
function killLeftoversAfter(pids: string): void {
  cleanups.push(() => {
    if (!existsSync(pids)) return;
    for (const pid of readFileSync(pids, 'utf8').trim().split('\n').map(Number)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}

/** hookgate with the runtime on, every agent run by `runner` (a command). */
function startWithRunner(dir: string, runner: string, hooks: Record<string, unknown> = {}) {
  return startTestServer(
    {
      hooks,
      agents: {
        defaults: { timeoutSeconds: 20, runner: { kind: 'command', argv: [runner] } },
        list: [{ id: 'main' }],
      },
    },
    { runtime: true, dataDir: dir },
  );
}

const SESSIONS = { defaultSessionKey: 'hook:ingress', allowedSessionKeyPrefixes: ['hook:'] };

it.each(LEFTOVERS)(
  'a runner that answers and exits while a child it left holds its %s ends done with its reply',
  async (_held, redirect) => {
    const { dir, cleanup } = tempDir('hookgate-leftover-');
    cleanups.push(cleanup);
    const pids = path.join(dir, 'leftover.pid');
    const runner = runnerScript(dir, [
      '#!/bin/sh',
      'cat >/dev/null',
      // The child sleeps long past the run's timeout, its output as the runner's.
      `sleep 300 </dev/null ${redirect} &`,
      `echo $! >> "${pids}"`,
      'echo "the reply to $HOOKGATE_RUN_ID"',
      'exit 0',
    ]);
    killLeftoversAfter(pids);
    const server = await startWithRunner(dir, runner, SESSIONS);
    cleanups.push(() => server.stop());
    const ids: string[] = [];
    // Two runs of one session: the second waits for the first, which must end.
    for (const message of ['first', 'second']) {
      const res = await server.post('agent', { message, wakeMode: 'next-heartbeat' });
      expect(res.status).toBe(200);
      ids.push(String(((await res.json()) as { runId: string }).runId));
    }
    for (const id of ids) {
      const run = await waitForRun(server, id, 45_000);
      expect({ state: run.state, reply: run.outcome?.reply }).toEqual({
        state: 'done',
        reply: `the reply to ${id}`,
      });
    }
    for (const id of ids) expect(await summariesOf(server, id)).toHaveLength(1);
    // The leftovers live on: nothing but the runner's own end was waited for.
    const left = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(left).toHaveLength(2);
    for (const pid of left) expect(isRunning(pid)).toBe(true);
  },
);

it('a runner that exits while its own output is still being read keeps all of it', async () => {
  const { dir, cleanup } = tempDir('hookgate-leftover-');
  cleanups.push(cleanup);
  // 300 KB, more than a pipe holds: the runner's last writes wait for hookgate to read.
  const runner = runnerScript(dir, [
    '#!/bin/sh',
    'cat >/dev/null',
    'head -c 300000 /dev/zero | tr "\\0" "a"',
    'echo',
    'exit 0',
    '',
  ]);
  const server = await startWithRunner(dir, runner);
  cleanups.push(() => server.stop());
  const res = await server.post('agent', { message: 'long', wakeMode: 'next-heartbeat' });
  const id = String(((await res.json()) as { runId: string }).runId);
  const run = await waitForRun(server, id, 45_000);
  expect(run.state).toBe('done');
  expect(run.outcome?.reply?.length).toBe(300_000);
});

it('a shutdown after the runner answered, while its leftover holds the output, keeps the answer', async () => {
  const { dir, cleanup } = tempDir('hookgate-leftover-');
  cleanups.push(cleanup);
  const pids = path.join(dir, 'leftover.pid');
  const exited = path.join(dir, 'runner.exited');
  // The leftover says when the runner is gone (reaped by hookgate), then sleeps on.
  const runner = runnerScript(dir, [
    '#!/bin/sh',
    'cat >/dev/null',
    'me=$$',
    `(while kill -0 $me 2>/dev/null; do sleep 0.02; done; touch "${exited}"; exec sleep 300) </dev/null &`,
    `echo $! >> "${pids}"`,
    'echo "the reply"',
    'exit 0',
  ]);
  killLeftoversAfter(pids);
  const server = await startWithRunner(dir, runner, SESSIONS);
  const res = await server.post('agent', { message: 'one', wakeMode: 'next-heartbeat' });
  const id = String(((await res.json()) as { runId: string }).runId);
  await waitFor('the runner to exit', () => existsSync(exited));
  // SIGTERM's path: the worker stops, its runs' signals abort.
  await server.stop();
  const store = SqliteRuntimeStore.open(dir, { migrate: false });
  cleanups.push(() => store.close());
  const run = await store.run(id);
  expect({ state: run?.state, reply: run?.outcome?.reply }).toEqual({
    state: 'done',
    reply: 'the reply',
  });
});
