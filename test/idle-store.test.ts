/**
 * An idle server leaves its store alone: nothing reads the embedded store on
 * a timer. The command line rings the store's doorbell after a request (and
 * after sending a run back), which is how the server hears of them; a run
 * an earlier process left waiting for its backoff still runs when it is due.
 * Real `hookgate serve` processes on SQLite; what touches the store is read
 * with strace (the idle test is skipped, with its reason, where there is none).
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { DOORBELL_FILE, ringDoorbell } from '../engine/store/sqlite/doorbell.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import {
  postHook,
  runHookgate,
  startServer,
  useProcessFixtures,
  writeConfig,
} from './helpers/process.ts';
import { query, sleep, startStub, waitFor } from './helpers/runtime.ts';

const TOKEN = 'idle-store-token-0123456789abcdef';
const temp = useProcessFixtures();

// The system calls a store touch makes: its file locks (every transaction, even one that reads
// only from SQLite's cache) and its file reads and writes.
const STORE_CALLS = 'fcntl,pread64,pwrite64,fsync,fdatasync';
const strace = spawnSync('strace', ['-V']).status === 0 ? 'strace' : undefined;

/**
 * The store system calls `pid` (all its threads) makes during `ms`, as strace lists them;
 * `meanwhile` runs once the tracing has begun.
 */
async function storeCallsDuring(
  pid: number,
  ms: number,
  meanwhile: () => Promise<void> = async () => undefined,
): Promise<string[]> {
  const out = path.join(temp(), 'strace.txt');
  const tracer = spawn('strace', [
    '-f',
    '-e',
    `trace=${STORE_CALLS}`,
    '-o',
    out,
    '-p',
    String(pid),
  ]);
  const exited = new Promise((resolve) => tracer.once('exit', resolve));
  // The window starts once strace has attached (it says so on stderr).
  let said = '';
  tracer.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    said += chunk;
  });
  await waitFor('strace to attach', () => said.includes('attached'), 10_000);
  await Promise.all([sleep(ms), meanwhile()]);
  tracer.kill('SIGINT');
  await exited;
  return readFileSync(out, 'utf8')
    .split('\n')
    .filter((line) => /^\d+\s+\w+\(/.test(line));
}

/** A server with the runtime on, its agents' runner an http runner to `agentUrl`. */
async function serve(dataDir: string, agentUrl?: string, more = '') {
  const dir = temp();
  const runner = agentUrl
    ? `agents:\n  defaults:\n    runner: { kind: http, url: "${agentUrl}" }\n`
    : '';
  const config = writeConfig(dir, `hooks:\n  enabled: true\n  token: ${TOKEN}\n${runner}${more}`);
  const server = await startServer(['--config', config, '--data-dir', dataDir, '--port', '0']);
  return { ...server, config };
}

describe('an idle server and its store', () => {
  it.skipIf(!strace)(
    'an idle server touches no store file: nothing polls it (needs strace)',
    async () => {
      const dataDir = path.join(temp(), 'data');
      const server = await serve(dataDir);
      const pid = server.child.pid as number;
      // Starting up uses the store (the schema, the leader's take-over); then it goes quiet.
      await waitFor(
        'the started server to leave its store alone for a second',
        async () => (await storeCallsDuring(pid, 1_000)).length === 0,
        30_000,
      );
      // The observation window: a read of the store on a timer (twice a second before) shows here.
      expect(await storeCallsDuring(pid, 3_000)).toEqual([]);
      // The tracing sees store calls where there are some: an accepted request makes them.
      const calls = await storeCallsDuring(pid, 1_500, async () => {
        const accepted = await postHook(server.url, 'wake', { text: 'hello' }, { token: TOKEN });
        expect(accepted.status).toBe(200);
      });
      expect(calls.length).toBeGreaterThan(0);
    },
  );

  it('a command-line request reaches an idle server through the doorbell', async () => {
    const dataDir = path.join(temp(), 'data');
    const server = await serve(dataDir);
    const reload = await runHookgate(['reload', '--config', server.config, '--data-dir', dataDir]);
    expect(reload.stderr).toBe('');
    expect(reload.stdout).toContain('Reloaded');
    expect(reload.code).toBe(0);
  });

  it('a run the command line sends back is run by the idle server at once', async () => {
    const dataDir = path.join(temp(), 'data');
    let refused = false;
    // The agent refuses the first turn for good (HTTP 400: the run fails), then answers.
    const agent = await startStub((_index, exchange) => {
      if (exchange.body['kind'] !== 'agent' || refused)
        return { status: 200, body: { reply: 'ok' } };
      refused = true;
      return { status: 400, body: { error: 'bad' } };
    });
    try {
      const server = await serve(dataDir, agent.url);
      const response = await postHook(server.url, 'agent', { message: 'again' }, { token: TOKEN });
      const { runId: actionId } = (await response.json()) as { runId: string };
      const state = () =>
        query(dataDir, 'SELECT state FROM actions WHERE id = ?', actionId)[0]?.['state'];
      await waitFor('the run to fail', () => state() === 'failed');
      const retry = await runHookgate(['retry', actionId, '--failed', '--data-dir', dataDir]);
      expect(retry.code).toBe(0);
      await waitFor('the run sent back to be done', () => state() === 'done', 20_000);
    } finally {
      await agent.close();
    }
  });

  it('a run an earlier process left waiting for its backoff runs when it is due', async () => {
    const dataDir = path.join(temp(), 'data');
    const busy = await startStub(() => ({ status: 503, body: { error: 'busy' } }));
    const agent = await startStub(() => ({ status: 200, body: { reply: 'ok' } }));
    try {
      // A run refused for now, waiting for its retry when its server is killed.
      const first = await serve(dataDir, busy.url, 'runtime:\n  retry: { baseDelayMs: 600000 }\n');
      const response = await postHook(first.url, 'agent', { message: 'later' }, { token: TOKEN });
      expect(response.status).toBe(200);
      await waitFor('the run to wait for its retry', () => {
        const [row] = query(dataDir, "SELECT attempts, state FROM actions WHERE kind = 'agent'");
        return row?.['state'] === 'queued' && row['attempts'] === 1;
      });
      first.child.kill('SIGKILL');
      await first.exited;
      // Due soon after the next start, which has no timer of its own for it.
      // Far enough ahead that the server is up before it (checked below).
      const dueAt = Date.now() + 5_000;
      const db = new DatabaseSync(path.join(dataDir, 'hookgate.db'));
      db.prepare("UPDATE actions SET next_attempt_at_ms = ? WHERE kind = 'agent'").run(dueAt);
      db.close();
      await serve(dataDir, agent.url);
      // Up before the due time: only the timer it armed at start can run the run now.
      expect(Date.now()).toBeLessThan(dueAt);
      await waitFor(
        'the waiting run to be done',
        () =>
          query(dataDir, "SELECT state FROM actions WHERE kind = 'agent'")[0]?.['state'] === 'done',
        20_000,
      );
      // Not before its time: the agent got the turn once, after the due time.
      const turns = agent.exchanges.filter((exchange) => exchange.body['kind'] === 'agent');
      expect(turns).toHaveLength(1);
      expect(turns[0]?.at).toBeGreaterThanOrEqual(dueAt);
    } finally {
      await agent.close();
      await busy.close();
    }
  });

  it('ringing a data directory no server watches is harmless', () => {
    expect(ringDoorbell(temp())).toBe(true);
    expect(ringDoorbell(path.join(temp(), 'missing'))).toBe(false);
  });

  it('a request whose bell cannot be rung is refused with the reason and not left behind', async () => {
    const dir = temp();
    const store = SqliteRuntimeStore.open(dir);
    try {
      symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, DOORBELL_FILE));
      await expect(store.request('heartbeat')).rejects.toThrow(
        /the running server cannot be told of the request: its doorbell: .*ELOOP/,
      );
      expect(query(dir, 'SELECT seq FROM control_requests')).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('a bell planted as a link (a data directory others can write) is not rung through', () => {
    const dir = temp();
    const target = path.join(dir, 'precious.txt');
    writeFileSync(target, 'keep me');
    symlinkSync(target, path.join(dir, DOORBELL_FILE));
    expect(ringDoorbell(dir)).toBe(false);
    expect(readFileSync(target, 'utf8')).toBe('keep me');
  });
});
