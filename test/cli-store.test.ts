/**
 * The store commands as a new user meets them, against a store seeded on
 * disk and the real `server.ts` process: terminal safety of what they print,
 * where they find the store, and what they say when no server runs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Action } from '../schemas/action.ts';
import { openSqliteStore } from '../engine/store/sqlite/action-store.ts';
import type { Outcome } from '../engine/runtime/runtime-store.ts';
import { SqliteRuntimeStore } from '../engine/store/sqlite/runtime-store.ts';
import { runHookgate, tempDir } from './helpers/process.ts';
import { sampleAction } from './store-contract.ts';

// Set the title, write the clipboard (OSC 52), clear the screen, a C1 CSI, a bidi override.
const HOSTILE =
  'hi \u001b]0;owned\u0007 \u001b]52;c;ZXZpbA==\u0007 \u001b[2J\u001b[H \u009b31m \u202egnp.exe\u202c \u2066x\u2069';
const CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw controls is the test.
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

const temp = tempDir('hookgate-cli-store-');
const dataDir = path.join(temp.dir, 'data');
const ids: Record<string, string> = {};

function agentAction(message: string): Action {
  return {
    ...sampleAction(),
    kind: 'agent',
    hook: `agent${HOSTILE}`,
    name: 'CLI',
    agentId: 'main',
    sessionKey: 'hook:cli',
    message,
    prompt: message,
    wakeMode: 'next-heartbeat',
    deliver: false,
    channel: 'last',
  } as unknown as Action;
}

/** Run a queued action through a claim to its end, as the worker would. */
async function finishQueued(
  store: SqliteRuntimeStore,
  id: string,
  state: 'done' | 'failed' | 'dead',
  outcome: Outcome,
): Promise<void> {
  const claim = store.claim(id);
  if (!claim) throw new Error(`action ${id} is not queued`);
  await store.finish(claim, state, outcome);
}

beforeAll(async () => {
  const accepted = await openSqliteStore(dataDir);
  const wake = sampleAction(HOSTILE);
  const dead = agentAction('dies');
  const failed = agentAction('fails');
  const deliveryDead = agentAction('delivers');
  const skipped = agentAction('skips');
  await accepted.appendOrGet({ actions: [wake, dead, failed, deliveryDead, skipped] });
  await accepted.close();
  Object.assign(ids, {
    wake: wake.id,
    dead: dead.id,
    failed: failed.id,
    deliveryDead: deliveryDead.id,
    skipped: skipped.id,
  });
  const store = SqliteRuntimeStore.open(dataDir);
  await store.addEvent({ sessionKey: 'main', text: HOSTILE, source: 'wake', trusted: false });
  await store.addEvent({
    sessionKey: 'ops',
    text: 'for the ops key',
    source: 'wake',
    trusted: false,
  });
  await finishQueued(store, dead.id, 'dead', {
    status: 'error',
    reason: `gave up after 5 attempts: HTTP 503${HOSTILE}`,
  });
  await finishQueued(store, failed.id, 'failed', {
    status: 'error',
    reason: 'exit 3: agent broke',
  });
  await finishQueued(store, deliveryDead.id, 'dead', {
    status: 'ok',
    reply: 'the reply text',
    delivery: { state: 'dead', channel: 'telegram', recipient: '1', reason: 'Telegram HTTP 502' },
  });
  await finishQueued(store, skipped.id, 'done', {
    status: 'ok',
    reply: 'answered',
    delivery: { state: 'skipped', reason: 'no recipient for slack' },
  });
  const beat = await store.startHeartbeat('requested');
  await store.finishHeartbeat(beat, {
    state: 'failed',
    events: [],
    error: 'runner unreachable: ECONNREFUSED',
  });
  await store.close();
});

afterAll(() => temp.cleanup());

const hookgate = (args: string[], options: Parameters<typeof runHookgate>[1] = {}) =>
  runHookgate(args, { cwd: temp.dir, ...options });

describe('store commands', () => {
  it.each([['actions'], ['runs'], ['events']])(
    'a wake text cannot drive the terminal through `%s` (title, OSC 52 clipboard, clear screen, bidi)',
    async (command) => {
      const result = await hookgate([command, '--data-dir', dataDir]);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('hi \\x1b]0;owned\\x07');
      expect(result.stdout).toContain('\\x1b]52;c;ZXZpbA==');
      expect(result.stdout).toContain('\\u202egnp.exe\\u202c');
      expect(result.stdout).not.toMatch(CONTROLS);
    },
  );

  it.each([['actions'], ['runs'], ['events']])(
    '`%s --json` prints no raw control character and parses to the stored text',
    async (command) => {
      const result = await hookgate([command, '--json', '--data-dir', dataDir]);
      expect(result.stdout).not.toMatch(CONTROLS);
      const texts = result.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.stringify(JSON.parse(line)));
      expect(texts.some((text) => text.includes(JSON.stringify(HOSTILE).slice(1, -1)))).toBe(true);
    },
  );

  it("a dead run's reason shows in the text view of `runs`, also when its delivery died", async () => {
    const result = await hookgate(['runs', '--data-dir', dataDir]);
    const line = (id: string) => result.stdout.split('\n').find((l) => l.includes(id)) ?? '';
    expect(line(ids['dead'] as string)).toMatch(
      /dead .*reason: gave up after 5 attempts: HTTP 503/,
    );
    expect(line(ids['failed'] as string)).toMatch(/failed .*reason: exit 3: agent broke/);
    expect(line(ids['deliveryDead'] as string)).toMatch(/reason: delivery dead: Telegram HTTP 502/);
    // A run that is done but whose reply went nowhere says so beside the reply.
    expect(line(ids['skipped'] as string)).toMatch(
      /done .*answered {2}\[delivery skipped: no recipient for slack\]$/,
    );
  });

  it('heartbeat failures show in `heartbeats` with their reason', async () => {
    const text = await hookgate(['heartbeats', '--data-dir', dataDir]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(
      /failed .*trigger=requested .*reason: runner unreachable: ECONNREFUSED/,
    );
    const json = await hookgate(['heartbeats', '--json', '--data-dir', dataDir]);
    // The text view's names, camelCase as the other commands' JSON.
    const first = JSON.parse(json.stdout.split('\n')[0] as string) as Record<string, unknown>;
    expect(first).toMatchObject({
      state: 'failed',
      trigger: 'requested',
      reason: 'runner unreachable: ECONNREFUSED',
      startedAt: expect.any(String),
    });
    expect(Object.keys(first).filter((key) => key.includes('_'))).toEqual([]);
  });

  it('`events --data-dir DIR` does not load ./hookgate.yaml', async () => {
    writeFileSync(path.join(temp.dir, 'hookgate.yaml'), 'this: [is not, a valid: config\n');
    const result = await hookgate(['events', '--data-dir', dataDir]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('hi \\x1b]0;owned');
  });

  it('a mistyped --data-dir exits 2 naming it; an existing directory without a store is "no store yet"', async () => {
    const typo = path.join(temp.dir, 'dta');
    for (const command of ['actions', 'runs', 'events', 'heartbeats', 'reload']) {
      const result = await hookgate([command, '--data-dir', typo]);
      expect(result.code, command).toBe(2);
      expect(result.stderr, command).toBe(`hookgate: --data-dir ${typo}: no such directory\n`);
      expect(result.stdout, command).toBe('');
    }
    const file = await hookgate(['actions', '--data-dir', path.join(temp.dir, 'hookgate.yaml')]);
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('not a directory');
    const empty = path.join(temp.dir, 'empty');
    mkdirSync(empty);
    const none = await hookgate(['actions', '--data-dir', empty]);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(`No actions: no store in ${empty} yet.`);
  });

  it('store commands with --config read the store without the secrets ${VAR} refers to', async () => {
    const file = path.join(temp.dir, 'secrets.yaml');
    writeFileSync(
      file,
      `hooks:\n  enabled: true\n  token: \${UNSET_HOOK_TOKEN}\nchannels:\n  telegram: { botToken: \${UNSET_BOT_TOKEN} }\nruntime:\n  dataDir: ./\${DATA_NAME}\nsession:\n  mainKey: ops\n`,
    );
    const env = { UNSET_HOOK_TOKEN: undefined, UNSET_BOT_TOKEN: undefined, DATA_NAME: 'data' };
    for (const command of ['actions', 'runs', 'events']) {
      const result = await hookgate([command, '--config', file], { env });
      expect(result.stderr, command).toBe('');
      expect(result.code, command).toBe(0);
    }
    // The main key comes from the config: `events` lists the ops session.
    const events = await hookgate(['events', '--config', file], { env });
    expect(events.stdout).toContain('for the ops key');
    // A variable the store location needs is still required.
    const missing = await hookgate(['runs', '--config', file], {
      env: { ...env, DATA_NAME: undefined },
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('runtime.dataDir: environment variable DATA_NAME is not set');
  });

  it('`heartbeat now` with no server running says so and exits 1', async () => {
    const result = await hookgate(['heartbeat', 'now', '--data-dir', dataDir], {
      timeoutMs: 20_000,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`no server is running on ${dataDir}`);
    // The request was withdrawn: a server started later does not run it.
    const store = SqliteRuntimeStore.open(dataDir);
    try {
      expect(await store.takeRequests()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('`reload` with no server running says so as `heartbeat now` does, exits 1 and leaves no request', async () => {
    const result = await hookgate(['reload', '--data-dir', dataDir], { timeoutMs: 20_000 });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `hookgate reload: no server is running on ${dataDir} (nothing took the request within 5 s)`,
    );
    const store = SqliteRuntimeStore.open(dataDir);
    try {
      expect(await store.takeRequests()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('`retry --failed` requeues a failed run; plain `retry` refuses it; a done run never', async () => {
    const plain = await hookgate(['retry', ids['failed'] as string, '--data-dir', dataDir]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('is failed, not dead (add --failed');
    const forced = await hookgate([
      'retry',
      ids['failed'] as string,
      '--failed',
      '--data-dir',
      dataDir,
    ]);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain(`Action ${ids['failed']} is queued again.`);
    const store = SqliteRuntimeStore.open(dataDir);
    try {
      expect(await store.run(ids['failed'] as string)).toMatchObject({
        state: 'queued',
        attempts: 0,
      });
      await finishQueued(store, ids['failed'] as string, 'done', { status: 'ok', reply: 'fine' });
    } finally {
      await store.close();
    }
    const done = await hookgate([
      'retry',
      ids['failed'] as string,
      '--failed',
      '--data-dir',
      dataDir,
    ]);
    expect(done.code).toBe(1);
    expect(done.stderr).toContain('is done, not dead or failed');
  });
});
