/**
 * Attack (or a typo): a store command given a flag of another command or a word too many. The
 * store commands shared one parse of every flag any of them took, so `heartbeats --state done`
 * listed failed heartbeats too, `runs dead` listed every run, `reload other.yaml` reloaded the
 * server's own file and said so, and `retry <id> --limit 2` went on to the store: each exited 0
 * as if it had understood. Each is now a usage error (exit 2) that says what the command takes.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { killAll, runHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

it.each([
  [['runs', 'dead']],
  [['runs', '--session', 'main']],
  [['heartbeats', '--state', 'done']],
  [['heartbeats', '--failed']],
  [['events', '--state', 'dead']],
  [['events', '--failed']],
  [['events', 'requeue', '7', '8']],
  [['events', 'requeue', '7', '--json']],
  [['heartbeat', 'now', 'extra']],
  [['heartbeat', 'now', '--limit', '2']],
  [['reload', '/some/other.yaml']],
  [['retry', 'some-id', '--limit', '2']],
  [['retry', 'some-id', 'another-id']],
  [['schema', '--bogus']],
  [['schema', 'extra']],
  [['test', 'wake', 'extra', '--payload', 'p.json']],
])(
  'hookgate %j is a usage error',
  async (args) => {
    const { dir, cleanup } = tempDir('hookgate-cli-stray-');
    try {
      const stored =
        args[0] === 'schema' || args[0] === 'test' ? args : [...args, '--data-dir', dir];
      const result = await runHookgate(stored, { cwd: dir });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^hookgate[ :]/);
      expect(result.stdout).toBe('');
    } finally {
      cleanup();
    }
  },
  60_000,
);

it('a sub-word after the flags still reads (heartbeat --data-dir D now, events --data-dir D requeue N)', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-stray-');
  try {
    // No server runs on the store: each gets as far as the store, never a usage error.
    for (const args of [
      ['heartbeat', '--data-dir', dir, 'now'],
      ['events', '--data-dir', dir, 'requeue', '7'],
    ]) {
      const result = await runHookgate(args, { cwd: dir });
      expect(result.code, args.join(' ')).not.toBe(2);
      expect(result.stderr, args.join(' ')).not.toContain('say "heartbeat now"');
    }
  } finally {
    cleanup();
  }
}, 60_000);

it('the flags a command takes still work', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-stray-');
  try {
    for (const args of [
      ['runs', '--state', 'dead', '--json', '--limit', '5'],
      ['events', '--session', 'main', '--json'],
      ['heartbeats', '--json', '--limit', '3'],
    ]) {
      const result = await runHookgate([...args, '--data-dir', dir], { cwd: dir });
      expect(result.code, args.join(' ')).toBe(0);
    }
    expect((await runHookgate(['schema'], { cwd: dir })).code).toBe(0);
  } finally {
    cleanup();
  }
}, 60_000);

it("another command's flag is named, without node's advice about positional arguments", async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-stray-');
  try {
    const result = await runHookgate(['heartbeats', '--state', 'done', '--data-dir', dir], {
      cwd: dir,
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("hookgate: Unknown option '--state'.");
    expect(result.stderr).not.toContain('To specify a positional argument');
  } finally {
    cleanup();
  }
}, 60_000);

it('serve on a port another server holds says so and how to pick another', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-port-');
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as AddressInfo;
  try {
    const result = await runHookgate(['serve', '--port', String(port), '--data-dir', dir], {
      cwd: dir,
      env: { HOOKGATE_TOKEN: 'port-test-token-0123456789abcdef' },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`127.0.0.1:${port} is already in use`);
    expect(result.stderr).toContain('--port N (through npm: npm start -- --port N)');
  } finally {
    holder.close();
    cleanup();
  }
}, 60_000);

it("serve with --port naming the admin listener's port says which it is", async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-port-');
  const file = writeConfig(
    dir,
    `hooks: { enabled: true, token: port-test-token-0123456789abcdef }
admin: { port: 39471, token: admin-port-token-0123456789abcdef }
runtime: { dataDir: ./data }
`,
  );
  try {
    const result = await runHookgate(['serve', '--config', file, '--port', '39471'], { cwd: dir });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("port 39471 is the admin listener's (admin.port)");
  } finally {
    cleanup();
  }
}, 60_000);
