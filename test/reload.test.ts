/**
 * Hot reload end to end, through the real binary: SIGHUP, `hookgate reload`
 * and reload.watch swap in a new configuration without a restart; a broken
 * one changes nothing and says why (in `hookgate reload` and /readyz); a
 * restart-only setting is named; the admin listener answers health,
 * readiness and metrics.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Readiness } from '../engine/admin/deps.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { ciWakeConfig } from './helpers/reload-config.ts';
import { killAll, listStoredActions, runHookgate, startServer } from './helpers/process.ts';

type Loose = Record<string, unknown>;

const ADMIN_TOKEN = 'reload-test-admin-token-0123456789abcdef';
const ADMIN = /admin listening on (http:\/\/127\.0\.0\.1:\d+)/;

function configText(greeting: string, extra = ''): string {
  return ciWakeConfig(
    `${greeting}: {{payload.build}}`,
    `admin: { port: 0, token: ${ADMIN_TOKEN} }\n${extra}`,
  );
}

const cleanups: Array<() => void> = [];
afterEach(async () => {
  await killAll();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function start(text: string) {
  const temp = tempDir('hookgate-reload-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, text);
  const server = await startServer(['--config', file]);
  const adminUrl = (await server.waitForStdout(ADMIN))[1] as string;
  const admin = (p: string, token: string | null = ADMIN_TOKEN) =>
    fetch(`${adminUrl}${p}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const post = (build: string) =>
    fetch(`${server.url}/hooks/ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ build }),
    });
  const lastText = async () => {
    const [newest] = await listStoredActions(['--data-dir', path.join(temp.dir, 'data')]);
    return String(newest?.['text'] ?? '');
  };
  const readyz = async () => (await admin('/readyz')).json() as Promise<Readiness>;
  return { file, dir: temp.dir, server, admin, post, lastText, readyz };
}

/** Poll until `probe` holds (the reload is asynchronous to the signal). */
async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('hot reload', () => {
  it("the console's body bound follows a reloaded hooks.maxBodyBytes", async () => {
    const bound = (bytes: number) =>
      configText('first').replace(
        '  enabled: true\n',
        `  enabled: true\n  maxBodyBytes: ${bytes}\n`,
      );
    const s = await start(bound(2048));
    const info = async () => ((await (await s.admin('/api/info')).json()) as Loose)['maxBodyBytes'];
    expect(await info()).toBe(2048);
    writeFileSync(s.file, bound(4096));
    s.server.child.kill('SIGHUP');
    await until(
      async () => (await s.readyz()).checks['reload']?.detail?.includes('SIGHUP') === true,
      'reload',
    );
    expect(await info()).toBe(4096);
  });

  it('SIGHUP swaps in an edited mapping; requests before and after get their own version', async () => {
    const s = await start(configText('first'));
    expect((await s.post('1')).status).toBe(200);
    expect(await s.lastText()).toContain('first: 1');
    writeFileSync(s.file, configText('second'));
    s.server.child.kill('SIGHUP');
    await until(
      async () => (await s.readyz()).checks['reload']?.detail?.includes('SIGHUP') === true,
      'reload',
    );
    expect((await s.post('2')).status).toBe(200);
    expect(await s.lastText()).toContain('second: 2');
    expect(s.server.child.exitCode).toBeNull();
  });

  it('hookgate reload: a broken config changes nothing, names the path, and /readyz says so', async () => {
    const s = await start(configText('first'));
    writeFileSync(
      s.file,
      configText('first').replace('action: wake', 'action: wake\n      when: { bogus_op: [1] }'),
    );
    const failed = await runHookgate(['reload', '--config', s.file]);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('the running configuration is unchanged');
    expect(failed.stderr).toMatch(/hooks\.mappings/);
    const ready = await s.admin('/readyz');
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as Readiness;
    expect(body.checks['reload']?.ok).toBe(false);
    // Still serving the configuration it had.
    expect((await s.post('3')).status).toBe(200);
    expect(await s.lastText()).toContain('first: 3');
    // Fixed: the next reload succeeds and readiness recovers.
    writeFileSync(s.file, configText('fixed'));
    const ok = await runHookgate(['reload', '--config', s.file]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('Reloaded');
    expect((await s.admin('/readyz')).status).toBe(200);
    expect((await s.post('4')).status).toBe(200);
    expect(await s.lastText()).toContain('fixed: 4');
  });

  it('hookgate reload warns of a runner command that does not exist (it reloads, as serve starts, but check refuses it)', async () => {
    const s = await start(configText('first'));
    writeFileSync(
      s.file,
      configText(
        'first',
        'agents: { defaults: { runner: { kind: command, argv: [./missing-runner.sh] } } }',
      ),
    );
    const result = await runHookgate(['reload', '--config', s.file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Reloaded');
    expect(result.stderr).toContain('hookgate reload: warning: agents.defaults.runner.argv.0');
    expect(result.stderr).toContain('missing-runner.sh');
  });

  it('names the settings that wait for a restart and keeps listening where it was', async () => {
    const s = await start(configText('first'));
    writeFileSync(
      s.file,
      configText('first').replace('port: 0 }', 'port: 1 }').replace('"off"', '"30m"'),
    );
    const result = await runHookgate(['reload', '--config', s.file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('wait for a restart: server, runtime.heartbeat');
    expect((await s.post('5')).status).toBe(200);
  });

  it('reload.watch: saving the file reloads it', async () => {
    const watch = 'reload: { watch: true, debounceMs: 50 }\n';
    const s = await start(configText('first', watch));
    writeFileSync(s.file, configText('watched', watch));
    await until(async () => {
      await s.post('6');
      return (await s.lastText()).includes('watched: 6');
    }, 'the watched change');
  });

  it('reload.watch: a changed transform module reloads the configuration', async () => {
    const watch = 'reload: { watch: true, debounceMs: 50 }\n';
    const transformMapping = configText('first', watch).replace(
      '      text: "first: {{payload.build}}"',
      '      transform: { module: shout.js, export: default }',
    );
    const temp = tempDir('hookgate-reload-transform-');
    cleanups.push(temp.cleanup);
    const module = path.join(temp.dir, 'hooks', 'transforms', 'shout.js');
    mkdirSync(path.dirname(module), { recursive: true });
    writeFileSync(module, 'export default ({ payload }) => ({ text: `v1 ${payload.build}` });\n');
    const file = path.join(temp.dir, 'hookgate.yaml');
    writeFileSync(file, transformMapping);
    const server = await startServer(['--config', file]);
    const adminUrl = (await server.waitForStdout(ADMIN))[1] as string;
    const reloadCheck = async () => {
      const answer = await fetch(`${adminUrl}/readyz`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      return ((await answer.json()) as Readiness).checks['reload']?.detail ?? '';
    };
    expect(await reloadCheck()).toBe('no reload since start');
    writeFileSync(module, 'export default ({ payload }) => ({ text: `v2 ${payload.build}` });\n');
    await until(async () => (await reloadCheck()).includes('file change'), 'the reload');
    const answer = await fetch(`${server.url}/hooks/ci`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ build: '9' }),
    });
    expect(answer.status).toBe(200);
    const [newest] = await listStoredActions(['--data-dir', path.join(temp.dir, 'data')]);
    expect(newest?.['text']).toContain('v2 9');
  });

  it('a new hook token applies at once: the old one is refused', async () => {
    const s = await start(configText('first'));
    const rotated = 'rotated-hook-token-abcdefghijklmnopqrstuvwxyz';
    writeFileSync(s.file, configText('first').replace(`token: ${TOKEN}`, `token: ${rotated}`));
    expect((await runHookgate(['reload', '--config', s.file])).code).toBe(0);
    expect((await s.post('7')).status).toBe(401);
  });
});

describe('admin listener', () => {
  it('answers health, readiness and metrics; the token is required and never shown', async () => {
    const s = await start(configText('first'));
    expect((await s.admin('/healthz', null)).status).toBe(401);
    expect((await s.admin('/healthz')).status).toBe(200);
    expect((await s.admin('/readyz', null)).status).toBe(401);
    const ready = await s.readyz();
    expect(ready.ready).toBe(true);
    expect(ready.checks['store']?.ok).toBe(true);
    expect((await s.post('8')).status).toBe(200);
    const metrics = await s.admin('/metrics');
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    const text = await metrics.text();
    expect(text).toMatch(/hookgate_requests_total\{[^}]*route="ci"[^}]*status="200"/);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(ADMIN_TOKEN);
  });
});
