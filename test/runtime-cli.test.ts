/**
 * The runtime's operator commands against a real server process, reading and
 * writing the same store while it runs: `runs`, `events`, `heartbeat now`
 * and `retry` (`node server.ts <command> --data-dir DIR`).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  agentRunner,
  killAgentGroups,
  query,
  readRecords,
  type Stub,
  startStub,
  summaryContent,
  waitFor,
  waitForFinal,
} from './helpers/runtime.ts';

const TOKEN = 'tok-runtime-cli-0123456789';

const temp = tempDir('hookgate-runtime-cli-');
const empty = tempDir('hookgate-runtime-cli-empty-');
const record = path.join(temp.dir, 'agent.jsonl');
const dataDir = path.join(temp.dir, 'data');
let relayUp = false;
let relay: Stub;
let server: RunningServer;

beforeAll(async () => {
  relay = await startStub(() =>
    relayUp ? { body: { reply: 'relayed' } } : { status: 503, body: 'relay down' },
  );
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    hooks: { enabled: true, token: TOKEN, allowRequestSessionKey: true },
    log: { level: 'warn' },
    agents: {
      defaults: { timeoutSeconds: 30, runner: agentRunner(record) },
      list: [
        { id: 'main', default: true },
        { id: 'relay', runner: { kind: 'http', url: `${relay.url}/run` } },
      ],
    },
    runtime: {
      dataDir: './data',
      heartbeat: { every: 'off' },
      retry: { maxAttempts: 2, baseDelayMs: 20, maxDelayMs: 100 },
    },
  };
  const file = writeConfig(temp.dir, JSON.stringify(config, null, 2));
  server = await startServer(['--config', file]);
});

afterAll(async () => {
  await killAll();
  killAgentGroups(readRecords(record));
  await relay.close();
  temp.cleanup();
  empty.cleanup();
});

/** Run `hookgate <args> --data-dir <dir>`. */
function hookgate(args: string[], dir = dataDir) {
  return runHookgate([...args, '--data-dir', dir]);
}

/** Each stdout line of `--json` output, parsed. */
function jsonLines(stdout: string): Array<Record<string, unknown>> {
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

async function post(hook: 'agent' | 'wake', body: Record<string, unknown>): Promise<string> {
  const res = await postHook(server.url, hook, body, { token: TOKEN });
  const json = (await res.json()) as { runId?: string; id?: string };
  expect(res.status).toBe(200);
  return (json.runId ?? json.id) as string;
}

const runs: Record<string, string> = {};

// Each case starts several CLI processes (a Node start each, seconds apiece on a loaded 2-core
// machine): a bound well above the 60 s default, which one case passed once under load.
describe('runtime commands', { timeout: 180_000 }, () => {
  it('say plainly when there is no store yet', async () => {
    const [runsOut, eventsOut, beat, retried] = await Promise.all([
      hookgate(['runs'], empty.dir),
      hookgate(['events'], empty.dir),
      hookgate(['heartbeat', 'now'], empty.dir),
      hookgate(['retry', 'some-id'], empty.dir),
    ]);
    for (const result of [runsOut, eventsOut]) {
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`No store in ${empty.dir} yet.`);
    }
    for (const result of [beat, retried]) {
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`No store in ${empty.dir} yet.`);
    }
  });

  // Every spelling is checked in-process (listLimit, cli-list-limit.test.ts); here each command
  // refuses through the real CLI, one process per spelling that Number() alone would take.
  it.each(['runs', 'events', 'heartbeats'])(
    '%s refuses a --limit that is not a positive integer (-1 listed everything)',
    async (command) => {
      const results = await Promise.all(
        ['-1', '1e20'].map((limit) => hookgate([command, `--limit=${limit}`])),
      );
      for (const result of results) {
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(`hookgate ${command}: --limit must be a positive integer`);
        expect(result.stdout).toBe('');
      }
    },
  );

  it('runs: lists runs newest first with state, attempts and outcome; --state filters', async () => {
    runs['ok'] = await post('agent', {
      message: 'list me',
      name: 'CLI',
      sessionKey: 'hook:cli-ok',
      wakeMode: 'next-heartbeat',
      deliver: false,
    });
    // One after the other, so that their summaries have a known order.
    await waitForFinal(dataDir, runs['ok']);
    runs['failed'] = await post('agent', {
      message: 'FAIL now',
      name: 'CLI',
      sessionKey: 'hook:cli-fail',
      wakeMode: 'next-heartbeat',
      deliver: false,
    });
    await waitForFinal(dataDir, runs['failed']);

    const [all, failed, text, bad] = await Promise.all([
      hookgate(['runs', '--json']),
      hookgate(['runs', '--json', '--state', 'failed']),
      hookgate(['runs']),
      hookgate(['runs', '--state', 'bogus']),
    ]);
    expect(all.code).toBe(0);
    expect(jsonLines(all.stdout)).toEqual([
      expect.objectContaining({
        id: runs['failed'],
        state: 'failed',
        attempts: 1,
        outcome: { status: 'error', reason: 'exit 3: something broke in the agent' },
      }),
      expect.objectContaining({
        id: runs['ok'],
        state: 'done',
        attempts: 1,
        outcome: { status: 'ok', reply: 'done: list me', ack: false },
      }),
    ]);
    expect(jsonLines(failed.stdout).map((row) => row['id'])).toEqual([runs['failed']]);

    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(runs['failed']);
    expect(lines[0]).toMatch(
      /failed +attempts=1 +agent=main session=hook:cli-fail +reason: exit 3: something broke in the agent$/,
    );
    expect(lines[1]).toContain(runs['ok']);
    expect(lines[1]).toMatch(/done +attempts=1 +agent=main session=hook:cli-ok +done: list me$/);

    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--state must be one of queued, running, done, failed, dead');
  });

  it('events: the main session, newest first, unwrapped in text; --session picks another', async () => {
    runs['wake'] = await post('wake', { text: 'Backup finished', mode: 'next-heartbeat' });
    await waitForFinal(dataDir, runs['wake']);

    const [json, text, other] = await Promise.all([
      hookgate(['events', '--json']),
      hookgate(['events']),
      hookgate(['events', '--session', 'hook:cli-ok']),
    ]);
    expect(json.code).toBe(0);
    const events = jsonLines(json.stdout);
    expect(
      events.map((event) => [event['source'], event['actionId'], event['consumedBy']]),
    ).toEqual([
      ['wake', runs['wake'], null],
      ['hook-summary', runs['failed'], null],
      ['hook-summary', runs['ok'], null],
    ]);
    expect(events.slice(1).map((event) => summaryContent(String(event['text'])))).toEqual([
      'Hook CLI (error): exit 3: something broke in the agent',
      'Hook CLI: done: list me',
    ]);
    for (const event of events) expect(event).toMatchObject({ sessionKey: 'main', trusted: false });

    const [wake] = text.stdout.trim().split('\n');
    expect(wake).toMatch(/ wake +pending +untrusted +Backup finished$/);
    expect(text.stdout).not.toContain('SECURITY NOTICE');
    expect(other.stdout.trim()).toBe('No events.');
  });

  it('heartbeat now: the running server runs a heartbeat that consumes the pending events', async () => {
    const asked = await hookgate(['heartbeat', 'now']);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain('The running server took the request and runs a heartbeat');

    const [beat] = await waitFor(
      'the requested heartbeat',
      () => {
        const rows = query(dataDir, "SELECT * FROM heartbeats WHERE state != 'running'");
        return rows.length > 0 && rows;
      },
      4_000,
    );
    expect(beat).toMatchObject({ reason: 'requested', state: 'done', events: 3, ack: 1 });
    const input = readRecords(record).find((entry) => entry.runId === beat?.['id']);
    expect(input?.kind).toBe('heartbeat');
    const lines = input?.message.split('\n') ?? [];
    // Each summary: a trusted status line, then the wrapped line (name and reply inside).
    expect(lines.filter((line) => line.startsWith('System: '))).toEqual([
      'System: Hook summary (ok):',
      'System: Hook summary (error):',
      expect.stringMatching(/^System: <<<EXTERNAL_UNTRUSTED_CONTENT id="/),
    ]);
    // The security notice once, before the events, not once per wrapped event.
    expect(lines[0]).toMatch(/^SECURITY NOTICE: The text between each pair/);
    expect(input?.message.split('SECURITY NOTICE').length).toBe(2);
    expect(input?.message).toContain('\nHook CLI: done: list me\n');
    expect(input?.message).toContain('\nHook CLI (error): exit 3: something broke in the agent\n');
    expect(input?.message).toContain('Backup finished');

    const [json, text, wrong] = await Promise.all([
      hookgate(['events', '--json']),
      hookgate(['events']),
      hookgate(['heartbeat', 'later']),
    ]);
    const id = beat?.['id'];
    expect(jsonLines(json.stdout).map((event) => event['consumedBy'])).toEqual([id, id, id]);
    expect(text.stdout).toMatch(/ wake +consumed +untrusted +Backup finished/);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('say "heartbeat now"');
  });

  it('retry: puts a dead action back in the queue with fresh attempts; refuses anything else', async () => {
    runs['dead'] = await post('agent', {
      message: 'relay this',
      name: 'Relay',
      agentId: 'relay',
      wakeMode: 'next-heartbeat',
      deliver: false,
    });
    await waitForFinal(dataDir, runs['dead']);

    const [dead, notDead, unknown, missing] = await Promise.all([
      hookgate(['runs', '--json', '--state', 'dead']),
      hookgate(['retry', runs['ok'] as string]),
      hookgate(['retry', 'no-such-action']),
      hookgate(['retry']),
    ]);
    expect(jsonLines(dead.stdout)).toEqual([
      expect.objectContaining({
        id: runs['dead'],
        attempts: 2,
        outcome: { status: 'error', reason: 'gave up after 2 attempts: HTTP 503: relay down' },
      }),
    ]);
    expect(notDead.code).toBe(1);
    expect(notDead.stderr).toContain(`action ${runs['ok']} is done, not dead`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no action no-such-action');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('an action id is required');

    relayUp = true;
    const retried = await hookgate(['retry', runs['dead'] as string]);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain(`Action ${runs['dead']} is queued again.`);
    expect(await waitForFinal(dataDir, runs['dead'], 4_000, ['done', 'failed'])).toMatchObject({
      state: 'done',
      attempts: 1,
      outcome: { status: 'ok', reply: 'relayed' },
    });
    expect(relay.exchanges).toHaveLength(3);
    const [latest] = jsonLines((await hookgate(['events', '--json', '--limit', '1'])).stdout);
    expect(latest).toMatchObject({ actionId: runs['dead'] });
    expect(summaryContent(String(latest?.['text']))).toBe('Hook Relay: relayed');
  });
});
