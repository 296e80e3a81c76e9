/**
 * `hookgate check` refuses a runner command or a workspace that does not
 * exist or cannot be used, naming the config path; `serve` only warns.
 * Commands resolve as the runtime starts them: "./x" from the config file's
 * directory, other relative paths from the workspace, bare names on PATH.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../schemas/config.ts';
import { agentPathProblems } from '../engine/runtime/runner-paths.ts';
import { compileValidator } from '../engine/validation.ts';
import type { Config } from '../schemas/config.ts';
import { runHookgate, startServer, useProcessFixtures, writeConfig } from './helpers/process.ts';

const temp = useProcessFixtures();
const validate = compileValidator<Config>(configSchema, { useDefaults: true });

/** A directory with an executable ./agent.sh, a non-executable ./plain.sh and ./work/bin/run.sh. */
function fixtureDir(): string {
  const dir = temp();
  writeFileSync(path.join(dir, 'agent.sh'), '#!/bin/sh\necho ok\n');
  chmodSync(path.join(dir, 'agent.sh'), 0o755);
  writeFileSync(path.join(dir, 'plain.sh'), '#!/bin/sh\necho ok\n');
  chmodSync(path.join(dir, 'plain.sh'), 0o644);
  mkdirSync(path.join(dir, 'work', 'bin'), { recursive: true });
  writeFileSync(path.join(dir, 'work', 'bin', 'run.sh'), '#!/bin/sh\necho ok\n');
  chmodSync(path.join(dir, 'work', 'bin', 'run.sh'), 0o755);
  return dir;
}

function problems(agents: unknown, dir: string) {
  const result = validate({ agents });
  if (!result.ok) throw new Error(result.message);
  return agentPathProblems(result.value, dir, { PATH: process.env['PATH'] });
}

const command = (...argv: string[]) => ({ kind: 'command', argv });

describe('check: runner commands and workspaces', () => {
  it.each([
    ['./agent.sh from the config directory', { defaults: { runner: command('./agent.sh') } }],
    ['a bare name on PATH', { defaults: { runner: command('sh', '-c', 'true') } }],
    ['an absolute path', { defaults: { runner: command('/bin/sh') } }],
    [
      'a relative path from the workspace',
      { list: [{ id: 'a', workspace: './work', runner: command('bin/run.sh') }] },
    ],
    [
      'an http runner (nothing on disk)',
      { defaults: { runner: { kind: 'http', url: 'http://x' } } },
    ],
  ])('accepts %s', (_name, agents) => {
    expect(problems(agents, fixtureDir())).toEqual([]);
  });

  it.each([
    [
      'a missing ./ command',
      { list: [{ id: 'a' }, { id: 'b', runner: command('./missing.sh') }] },
      'agents.list.1.runner.argv.0',
      /command "\.\/missing\.sh" \(.*missing\.sh\) does not exist/,
    ],
    [
      'a command that is not executable',
      { defaults: { runner: command('./plain.sh') } },
      'agents.defaults.runner.argv.0',
      /is not an executable file/,
    ],
    [
      'a bare name not on PATH',
      { defaults: { runner: command('no-such-agent-binary-0123') } },
      'agents.defaults.runner.argv.0',
      /not an executable file on PATH/,
    ],
    [
      'a relative path that exists from the config directory but not from the workspace',
      { list: [{ id: 'a', workspace: './work', runner: command('work/bin/run.sh') }] },
      'agents.list.0.runner.argv.0',
      /work\/work\/bin\/run\.sh\) does not exist/,
    ],
    [
      'a directory as the command',
      { defaults: { runner: command('./work') } },
      'agents.defaults.runner.argv.0',
      /is not an executable file/,
    ],
    [
      'a missing workspace',
      { list: [{ id: 'a', workspace: './nowhere', runner: command('./agent.sh') }] },
      'agents.list.0.workspace',
      /workspace .*nowhere does not exist/,
    ],
    [
      'a file as the workspace',
      { list: [{ id: 'a', workspace: './agent.sh' }] },
      'agents.list.0.workspace',
      /is not a directory/,
    ],
  ])('refuses %s, naming %s', (_name, agents, at, message) => {
    expect(problems(agents, fixtureDir())).toEqual([
      { path: at, message: expect.stringMatching(message) },
    ]);
  });

  it('hookgate check exits 2 naming the runner command that does not exist', async () => {
    const dir = fixtureDir();
    const file = writeConfig(
      dir,
      JSON.stringify({
        hooks: { enabled: true, token: 'tok-check-runner-0123' },
        agents: { list: [{ id: 'main' }, { id: 'b', runner: command('./missing.sh') }] },
      }),
    );
    const result = await runHookgate(['check', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'hookgate: config error: agents.list.1.runner.argv.0: command "./missing.sh"',
    );
  });

  it('serve starts with a missing runner command and logs a warning naming it', async () => {
    const dir = fixtureDir();
    const file = writeConfig(
      dir,
      JSON.stringify({
        server: { host: '127.0.0.1', port: 0 },
        hooks: { enabled: true, token: 'tok-check-runner-0123' },
        runtime: { dataDir: './data', heartbeat: { every: 'off' } },
        agents: { defaults: { runner: command('./missing.sh') } },
      }),
    );
    const server = await startServer(['--config', file]);
    const warning = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line['path'] === 'agents.defaults.runner.argv.0');
    expect(warning).toMatchObject({ level: 40, msg: expect.stringMatching(/does not exist/) });
    server.child.kill('SIGTERM');
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
  });
});
