/**
 * `hookgate serve` holds its tokens to the rule `hookgate check` applies (the
 * audit's guessable-token warning): a weak `hooks.token`, `admin.token` or
 * quickstart `HOOKGATE_TOKEN` is logged as a warning at start, naming the
 * setting and never the value; the service still starts. A reload that brings
 * one says so in its outcome.
 */
import { randomBytes } from 'node:crypto';
import { openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { readLogLines } from './helpers/log-lines.ts';
import {
  postHook,
  type RunningServer,
  startServer,
  useProcessFixtures,
  writeConfig,
} from './helpers/process.ts';

const temp = useProcessFixtures();

const STRONG = randomBytes(32).toString('hex');
const WEAK = 'hunter2-hunter2';

type LogLine = { level?: number; setting?: string; msg?: string };

function logLines(server: RunningServer): LogLine[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Settings named by the warnings (pino level 40) logged so far. */
function warnedSettings(server: RunningServer): string[] {
  return logLines(server)
    .filter((line) => line.level === 40 && line.setting !== undefined)
    .map((line) => line.setting as string);
}

async function stop(server: RunningServer): Promise<void> {
  server.child.kill('SIGTERM');
  expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
}

function config(hookToken: string, adminToken?: string): string {
  return [
    'server: { host: 127.0.0.1, port: 0 }',
    `hooks: { enabled: true, token: "${hookToken}" }`,
    ...(adminToken === undefined
      ? []
      : [`admin: { host: 127.0.0.1, port: 0, token: "${adminToken}" }`]),
    'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
    '',
  ].join('\n');
}

describe('serve warns of a guessable token at start', () => {
  it.each([
    { name: 'a short hooks.token', hooks: WEAK, admin: undefined, warned: ['hooks.token'] },
    { name: 'a short admin.token', hooks: STRONG, admin: WEAK, warned: ['admin.token'] },
    {
      name: 'a long but patterned hooks.token',
      hooks: 'ab'.repeat(40),
      admin: undefined,
      warned: ['hooks.token'],
    },
  ])('$name: warned by name, the value never logged, still serving', async (row) => {
    const dir = temp();
    const file = writeConfig(dir, config(row.hooks, row.admin));
    const server = await startServer(['--config', file]);
    await server.waitForStdout(/looks guessable/);
    expect((await postHook(server.url, 'wake', { text: 'hi' }, { token: row.hooks })).status).toBe(
      200,
    );
    await stop(server);
    expect(warnedSettings(server)).toEqual(row.warned);
    const weak = row.admin ?? row.hooks;
    expect(server.stdout()).not.toContain(weak);
    expect(server.stderr()).not.toContain(weak);
  });

  it('a quickstart HOOKGATE_TOKEN that is guessable is warned as HOOKGATE_TOKEN', async () => {
    const cwd = temp();
    const server = await startServer(['--port', '0'], { cwd, env: { HOOKGATE_TOKEN: WEAK } });
    await server.waitForStdout(/looks guessable/);
    await stop(server);
    expect(warnedSettings(server)).toEqual(['HOOKGATE_TOKEN']);
    expect(server.stdout()).not.toContain(WEAK);
  });

  it.each([
    { name: 'strong tokens from a config file', file: true },
    { name: 'the quickstart generated token', file: false },
  ])('$name: no token warning', async ({ file }) => {
    const dir = temp();
    const server = file
      ? await startServer(['--config', writeConfig(dir, config(STRONG, `${STRONG}-admin`))])
      : await startServer(['--port', '0'], { cwd: dir, env: { HOOKGATE_TOKEN: undefined } });
    await stop(server);
    // The service logged its start (so the absence below is not vacuous).
    expect(logLines(server).some((line) => line.msg?.startsWith('listening on'))).toBe(true);
    expect(server.stdout()).not.toContain('looks guessable');
  });
});

describe('a reload that brings a guessable token', () => {
  it('names the setting in the outcome and the log, never the value', async () => {
    const dir = temp();
    const file = writeConfig(dir, config(STRONG));
    const log = path.join(dir, 'log.jsonl');
    const logger = createLogger('info', openSync(log, 'a'));
    const hookgate = await startHookgate(loadConfigFile(file, {}), {
      logger,
      runtime: false,
      env: {},
    });
    try {
      const first = await hookgate.reload('test');
      expect(first.ok).toBe(true);
      expect(first.warnings).toBeUndefined();
      writeFileSync(file, config(WEAK));
      const outcome = await hookgate.reload('test');
      expect(outcome.ok).toBe(true);
      expect(outcome.warnings).toEqual([expect.stringMatching(/^hooks\.token: looks guessable/)]);
      expect(JSON.stringify(outcome)).not.toContain(WEAK);
    } finally {
      await hookgate.close();
    }
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    const reloads = readLogLines(log).filter((line) => line['msg'] === 'reloaded');
    expect(reloads.map((line) => [line['level'], line['warnings']])).toEqual([
      [30, undefined],
      [40, [expect.stringMatching(/^hooks\.token: looks guessable/)]],
    ]);
    expect(readFileSync(log, 'utf8')).not.toContain(WEAK);
  });
});
