/**
 * SIGHUP (reload) while `serve` is still starting: the config file is read, the store is
 * opening, the port not yet bound. The reload handler was installed only just before the
 * listening line, so for most of the start (about 0.8 s here) SIGHUP met the default action
 * and killed the server; the bin, which now forwards SIGHUP to the Node 24 it started,
 * made the same window kill it too. A reload asked for during the start is held and done
 * once the server listens.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { killAll, LISTENING, spawnHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

it('a SIGHUP while the store opens does not kill the starting server', async () => {
  const { dir, cleanup } = tempDir();
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks: { enabled: true, token: test-hook-token-0123456789 }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    const server = spawnHookgate(['serve', '--config', file], { cwd: dir });
    const store = path.join(dir, 'data');
    // The store being opened: well into the start, before the port is bound.
    const deadline = Date.now() + 20_000;
    while (!existsSync(store) && !LISTENING.test(server.stdout()) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(LISTENING.test(server.stdout())).toBe(false);
    server.child.kill('SIGHUP');
    await server.waitForStdout(LISTENING, 20_000);
    expect(server.child.exitCode).toBeNull();
    expect(server.child.signalCode).toBeNull();
    // The held reload is done once the server listens.
    await server.waitForStdout(
      /"trigger":"SIGHUP"[^\n]*"reloaded"|"reloaded"[^\n]*"trigger":"SIGHUP"/,
      20_000,
    );
    server.child.kill('SIGTERM');
    expect(await server.waitForExit(20_000)).toEqual({ code: 0, signal: null });
  } finally {
    cleanup();
  }
});
