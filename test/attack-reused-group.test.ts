/**
 * Attack: a process group id recorded for a runner before a crash, reused
 * by then. The watchdog ends a runner's group when hookgate dies, so by the
 * next start (after a reboot, or days later) the recorded id may name an
 * unrelated program's group, or another run's: the start must not SIGKILL
 * it. A group that is still that run's (it carries HOOKGATE_RUN_ID set to the
 * run's id) is still ended (runtime-recovery.test.ts).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, expect, it } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './helpers/hookgate.ts';
import { agentRunner, isRunning, killAgentGroups, readRecords } from './helpers/runtime.ts';
import { waitForRun } from './helpers/store-reads.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it.each([
  ['an unrelated program', {}],
  ["another run's runner (it carries another HOOKGATE_RUN_ID)", { HOOKGATE_RUN_ID: 'another-run' }],
])('a recorded runner group reused by %s is not killed at the next start', async (_name, marks) => {
  const { dir, cleanup } = tempDir('hookgate-reused-');
  cleanups.push(cleanup);
  const record = path.join(dir, 'agent.jsonl');
  const config = {
    agents: { defaults: { runner: agentRunner(record) }, list: [{ id: 'main' }] },
    runtime: { heartbeat: { every: 'off' } },
  };
  // Accepted while the runtime is off: stored, queued.
  let server: TestServer = await startTestServer(config, { dataDir: dir });
  const response = await server.post('agent', { message: 'hello', wakeMode: 'next-heartbeat' });
  const { runId } = (await response.json()) as { runId: string };
  await server.stop();

  // An unrelated program leading its own group (as a reused id would be).
  const bystander = spawn('sleep', ['60'], {
    detached: true,
    stdio: 'ignore',
    env: { ...process.env, ...marks },
  });
  const pid = bystander.pid as number;
  cleanups.push(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  // As a SIGKILL mid-run leaves the store: the run running, its (old) group recorded.
  const db = new DatabaseSync(path.join(dir, 'hookgate.db'));
  db.prepare("UPDATE actions SET state = 'running', runner_pgid = ? WHERE id = ?").run(pid, runId);
  db.close();

  server = await startTestServer(config, { dataDir: dir, runtime: true });
  cleanups.push(async () => {
    await server.stop();
    killAgentGroups(readRecords(record));
  });
  const run = await waitForRun(server, runId);
  expect(run.state).toBe('done');
  expect(isRunning(pid)).toBe(true);
});
