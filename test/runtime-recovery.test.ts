/**
 * Crash recovery of the real server process: SIGKILL in the middle of agent
 * runs (a runner that sleeps, and one that also leaves a child process).
 * The runner process groups end with the server (their watchdog); one whose
 * watchdog was killed first is ended on the next start. After a restart on
 * the same data directory the interrupted actions run again to a final
 * outcome, and a completed action is never run again (counted in the
 * agent's records).
 */
import { writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  killAll,
  postHook,
  type RunningServer,
  runHookgate,
  startServer,
  tempDir,
  writeConfig,
} from './helpers/process.ts';
import {
  type AgentRecord,
  actionRow,
  agentRunner,
  isRunning,
  killAgentGroups,
  killWatchdog,
  query,
  summaries,
  readRecords,
  sleep,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';

const TOKEN = 'tok-recovery-0123456789';

const temps: Array<() => void> = [];
let record = '';
const launched: RunningServer[] = [];

afterEach(async (context) => {
  // A failure under load is easier to read with what the servers logged.
  if (context.task.result?.state === 'fail') {
    for (const server of launched)
      process.stderr.write(`--- server :${server.port}\n${server.stdout()}${server.stderr()}\n`);
  }
  launched.length = 0;
  await killAll();
  killAgentGroups(readRecords(record));
});
afterAll(() => {
  for (const cleanup of temps.splice(0)) cleanup();
});

/** A config file in a fresh directory: the recording agent as runner, data in ./data. */
function setup(): { file: string; dataDir: string } {
  const { dir, cleanup } = tempDir('hookgate-recovery-');
  temps.push(cleanup);
  record = path.join(dir, 'agent.jsonl');
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    hooks: { enabled: true, token: TOKEN, allowRequestSessionKey: true },
    log: { level: 'warn' },
    agents: { defaults: { timeoutSeconds: 30, runner: agentRunner(record) } },
    runtime: {
      dataDir: './data',
      concurrency: 4,
      heartbeat: { every: 'off' },
      retry: { maxAttempts: 5, baseDelayMs: 600_000, maxDelayMs: 600_000 },
    },
  };
  // JSON is YAML.
  const file = writeConfig(dir, JSON.stringify(config, null, 2));
  return { file, dataDir: path.join(dir, 'data') };
}

/** Start `serve --config file`, remembered for the failure report. */
async function serve(file: string): Promise<RunningServer> {
  const server = await startServer(['--config', file]);
  launched.push(server);
  return server;
}

async function accept(server: RunningServer, body: Record<string, unknown>): Promise<string> {
  const res = await postHook(
    server.url,
    'agent',
    { wakeMode: 'next-heartbeat', deliver: false, ...body },
    { token: TOKEN },
  );
  const json = (await res.json()) as { runId: string };
  expect(res.status).toBe(200);
  return json.runId;
}

/** Accept a wake (its 200 checked). */
async function wake(server: RunningServer, text: string, mode: 'now' | 'next-heartbeat') {
  const res = await postHook(server.url, 'wake', { text, mode }, { token: TOKEN });
  expect(res.status).toBe(200);
}

async function sigkill(server: RunningServer): Promise<void> {
  server.child.kill('SIGKILL');
  expect(await server.waitForExit()).toEqual({ code: null, signal: 'SIGKILL' });
}

function recordsOf(runId: string, phase: AgentRecord['phase']): AgentRecord[] {
  return readRecords(record).filter((entry) => entry.runId === runId && entry.phase === phase);
}

describe('SIGKILL in the middle of a run', () => {
  it('ends the old runner process groups with the server or else on restart, runs the actions again, and never reruns a completed one', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);

    // Two runs in flight: one held until the test releases it (after the restart), one whose
    // agent also leaves a child process behind.
    const long = await accept(server, {
      message: 'HOLD long job',
      name: 'Long',
      sessionKey: 'hook:long',
      idempotencyKey: 'long-1',
    });
    const stuck = await accept(server, {
      message: 'SPAWN SLEEP:10000 stuck job',
      name: 'Stuck',
      sessionKey: 'hook:stuck',
      timeoutSeconds: 2,
    });
    const [longRun] = await waitFor('the long run to start', () => {
      const found = recordsOf(long, 'start');
      return found.length > 0 && found;
    });
    const [stuckChild] = await waitFor('the stuck run to spawn its child', () => {
      const found = recordsOf(stuck, 'spawned');
      return found.length > 0 && found;
    });
    const stuckPids = [stuckChild?.pid, stuckChild?.childPid] as number[];

    // Without its watchdog, the stuck runner's group outlives the server (its own process
    // group) until the next start ends it; the long one ends with the server.
    killWatchdog(stuckPids[0] as number);
    await sigkill(server);
    await waitFor('the long runner to end with the server', () => !isRunning(longRun?.pid ?? 0));
    for (const pid of stuckPids) expect(isRunning(pid), `pid ${pid}`).toBe(true);
    expect(actionRow(dataDir, long)).toMatchObject({ state: 'running', attempts: 1 });
    expect(actionRow(dataDir, stuck)).toMatchObject({ state: 'running', attempts: 1 });

    server = await serve(file);
    await waitFor('the old runner processes to be gone', () =>
      stuckPids.every((pid) => !isRunning(pid)),
    );

    // Resumed at once (retries back off for ten minutes in this config, so a start within the
    // wait means no backoff), and run to a final outcome once released.
    const [, again] = await waitFor('the long run to start again', () => {
      const found = recordsOf(long, 'start');
      return found.length > 1 && found;
    });
    expect(again?.pid).not.toBe(longRun?.pid);
    writeFileSync(`${record}.release`, '');
    expect(await waitForFinal(dataDir, long)).toMatchObject({
      state: 'done',
      attempts: 2,
      outcome: { status: 'ok', reply: 'done: HOLD long job' },
    });
    // The interrupted attempt never finished; only the new one did.
    expect(recordsOf(long, 'end').map((entry) => entry.pid)).toEqual([again?.pid]);
    expect(summaries(dataDir, long)).toEqual(['Hook Long: done: HOLD long job']);

    // The stuck agent never answers: its second attempt ends at its timeout, and is killed.
    expect(await waitForFinal(dataDir, stuck)).toMatchObject({
      state: 'failed',
      attempts: 2,
      outcome: { status: 'timeout' },
    });
    expect(summaries(dataDir, stuck)).toEqual(['Hook Stuck (timeout): no reply within 2s']);
    const spawned = recordsOf(stuck, 'spawned');
    expect(spawned).toHaveLength(2);
    await waitFor('the second stuck attempt and its child to be gone', () =>
      [spawned[1]?.pid, spawned[1]?.childPid].every((pid) => !isRunning(pid as number)),
    );

    // Another crash and restart: finished actions are not run again, and the idempotency key holds.
    await sigkill(server);
    server = await serve(file);
    expect(
      await accept(server, {
        message: 'HOLD long job',
        name: 'Long',
        sessionKey: 'hook:long',
        idempotencyKey: 'long-1',
      }),
    ).toBe(long);
    await sleep(1_200);
    expect(recordsOf(long, 'start')).toHaveLength(2);
    expect(recordsOf(stuck, 'start')).toHaveLength(2);
    expect(actionRow(dataDir, long)).toMatchObject({ state: 'done', attempts: 2 });
    expect(actionRow(dataDir, stuck)).toMatchObject({ state: 'failed', attempts: 2 });
    expect(summaries(dataDir, long)).toHaveLength(1);
    expect(summaries(dataDir, stuck)).toHaveLength(1);
  });
});

describe('other interruptions', () => {
  it('SIGKILL during a heartbeat: its runner process group (without its watchdog) is ended on restart and its events stay pending', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);
    await wake(server, 'SPAWN HOLD check the queue', 'now');
    const beat = await waitFor('the heartbeat runner to spawn its child', () =>
      readRecords(record).find((entry) => entry.kind === 'heartbeat' && entry.phase === 'spawned'),
    );
    killWatchdog(beat.pid);
    await sigkill(server);
    expect(isRunning(beat.pid)).toBe(true);

    server = await serve(file);
    // Pending: marked by no heartbeat, and inside no heartbeat's consumed range.
    expect(
      query(dataDir, 'SELECT consumed_by FROM system_events').map((row) => row['consumed_by']),
    ).toEqual([null]);
    expect(query(dataDir, 'SELECT heartbeat_id FROM event_consumption')).toEqual([]);
    await waitFor(
      `the old heartbeat runner (pid ${beat.pid}) and its child (pid ${beat.childPid}) to be gone`,
      () => [beat.pid, beat.childPid as number].every((pid) => !isRunning(pid)),
    );
  });

  it('a heartbeat asked for now that a SIGKILL cut short runs at the next start, with the events it missed', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);
    await wake(server, 'HOLD check the deploy', 'now');
    await waitFor('the heartbeat to start', () =>
      readRecords(record).find((entry) => entry.kind === 'heartbeat'),
    );
    await sigkill(server);
    // The next heartbeat's agent answers at once.
    writeFileSync(`${record}.release`, '');

    server = await serve(file);
    const ended = await waitFor('a heartbeat to end after the restart', () =>
      readRecords(record).find((entry) => entry.kind === 'heartbeat' && entry.phase === 'end'),
    );
    expect(ended.message).toContain('check the deploy');
    await waitFor(
      'the resumed heartbeat to be recorded done',
      () => query(dataDir, "SELECT reason FROM heartbeats WHERE state = 'done'").length === 1,
    );
    expect(query(dataDir, "SELECT reason FROM heartbeats WHERE state = 'done'")).toEqual([
      { reason: 'resumed' },
    ]);
  });

  it('`hookgate heartbeat now` taken by a server that a SIGKILL cut short runs at the next start', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);
    await wake(server, 'HOLD look at the queue', 'next-heartbeat');
    const asked = await runHookgate(['heartbeat', 'now', '--config', file]);
    expect(asked.code, asked.stderr).toBe(0);
    await waitFor('the heartbeat to start', () =>
      readRecords(record).find((entry) => entry.kind === 'heartbeat'),
    );
    await sigkill(server);
    writeFileSync(`${record}.release`, '');

    server = await serve(file);
    await waitFor(
      'the resumed heartbeat to be recorded done',
      () => query(dataDir, "SELECT reason FROM heartbeats WHERE state = 'done'").length === 1,
    );
    expect(query(dataDir, "SELECT reason FROM heartbeats WHERE state = 'done'")).toEqual([
      { reason: 'resumed' },
    ]);
    // Served: answered in the store, so a later start does not run it again.
    await waitFor(
      'the request to be answered',
      () => query(dataDir, 'SELECT result FROM control_answers').length === 1,
    );
  });

  it('events that wait for the next heartbeat still wait after a restart: no heartbeat at start', async () => {
    const { file } = setup();
    let server = await serve(file);
    await wake(server, 'quiet note', 'next-heartbeat');
    await sigkill(server);

    server = await serve(file);
    // A heartbeat the start had asked for would run before this one, with the quiet note alone.
    await wake(server, 'marker now', 'now');
    await waitFor('the marker’s heartbeat to end', () =>
      readRecords(record).find((entry) => entry.kind === 'heartbeat' && entry.phase === 'end'),
    );
    const beats = readRecords(record).filter(
      (entry) => entry.kind === 'heartbeat' && entry.phase === 'start',
    );
    expect(beats).toHaveLength(1);
    expect(beats[0]?.message).toContain('quiet note');
    expect(beats[0]?.message).toContain('marker now');
  });

  it('a run whose end could not be written runs again after a restart, its turns in history once', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);
    // The store refuses the run's summary event, so the transaction that ends the run fails
    // after its turn went through (as a full disk would).
    // The server writes beside this connection: wait for its lock instead of failing at once.
    const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'), { timeout: 10_000 });
    db.exec(`CREATE TRIGGER refuse_summary BEFORE INSERT ON system_events
      WHEN NEW.source = 'hook-summary' BEGIN SELECT RAISE(ABORT, 'no room left'); END`);
    const runId = await accept(server, { message: 'count once', name: 'Once' });
    await waitFor('the run’s end to fail', () => server.stdout().includes('no room left'));
    expect(recordsOf(runId, 'end')).toHaveLength(1);
    expect(actionRow(dataDir, runId)?.state).toBe('running');
    const turns = () =>
      query(dataDir, 'SELECT role FROM session_turns WHERE run_id = ? ORDER BY seq', runId).map(
        (row) => row['role'],
      );
    expect(turns()).toEqual([]);

    db.exec('DROP TRIGGER refuse_summary');
    db.close();
    await sigkill(server);
    server = await serve(file);
    expect(await waitForFinal(dataDir, runId)).toMatchObject({ state: 'done', attempts: 2 });
    expect(recordsOf(runId, 'end')).toHaveLength(2);
    expect(turns()).toEqual(['user', 'assistant']);
    expect(summaries(dataDir, runId)).toEqual(['Hook Once: done: count once']);
  });

  it('SIGTERM in the middle of a run: the runner is ended, the run is queued again without using an attempt, and completes after restart', async () => {
    const { file, dataDir } = setup();
    let server = await serve(file);
    const runId = await accept(server, { message: 'HOLD graceful', name: 'Graceful' });
    const first = await waitFor('the run to start', () => recordsOf(runId, 'start')[0]);

    server.child.kill('SIGTERM');
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
    await waitFor('the runner to be ended', () => !isRunning(first.pid));
    expect(actionRow(dataDir, runId)?.state).toBe('queued');
    expect(summaries(dataDir, runId)).toEqual([]);

    server = await serve(file);
    writeFileSync(`${record}.release`, '');
    const row = await waitForFinal(dataDir, runId);
    expect(row.state).toBe('done');
    expect(recordsOf(runId, 'start')).toHaveLength(2);
    expect(recordsOf(runId, 'end')).toHaveLength(1);
    expect(summaries(dataDir, runId)).toEqual(['Hook Graceful: done: HOLD graceful']);
    // worker.ts: "Interrupted by our own shutdown: back to the queue, not counted against the attempts."
    expect(row.attempts, 'attempts after one interrupted and one completed run').toBe(1);
  });
});
