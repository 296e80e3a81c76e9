/**
 * A command runner's `env` value (or `argv` item) holding a NUL loaded without a word, and every
 * spawn of that runner failed (a process's environment and arguments are C strings: Node
 * refuses a NUL in them), each run retried until dead. It is now a config error at load (boot,
 * check, reload), after `${VAR}` substitution, naming the setting and never the value (an env
 * value is often the agent's API key).
 */
import { afterAll, expect, it } from 'vitest';
import { type ConfigError, resolveConfig } from '../engine/config.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { killAll, runHookgate, writeConfig } from './helpers/process.ts';
import { configRefusal } from './helpers/refused-config.ts';

afterAll(killAll);

const base = { baseDir: '/srv/hookgate', dataDir: '/tmp/hookgate-unused' };
const hooks = { enabled: true, token: TOKEN };
const command = (extra: Record<string, unknown>) => ({
  kind: 'command',
  argv: ['./agent.sh'],
  ...extra,
});

function refusal(raw: Record<string, unknown>, env: Record<string, string> = {}): ConfigError {
  return configRefusal({ hooks, ...raw }, base, env);
}

// Each value holds the text `SeCrEt`, which must never be in the error.
it.each([
  [
    'agents.defaults.runner.env.API_KEY',
    { agents: { defaults: { runner: command({ env: { API_KEY: 'sk-SeCrEt\u0000' } }) } } },
  ],
  [
    'agents.list.0.runner.env.TOKEN',
    {
      agents: {
        list: [{ id: 'ops', runner: command({ env: { MODE: 'x', TOKEN: '\u0000SeCrEt' } }) }],
      },
    },
  ],
  [
    'agents.defaults.runner.argv.1',
    { agents: { defaults: { runner: command({ argv: ['./agent.sh', '--key=SeCrEt\u0000'] }) } } },
  ],
])('%s holding a NUL is refused, naming it and not its value', (setting, raw) => {
  const err = refusal(raw);
  expect(err.path).toBe(setting);
  expect(err.message).not.toContain('SeCrEt');
});

it('an env value from ${VAR} is checked after substitution', () => {
  const err = refusal(
    { agents: { defaults: { runner: command({ env: { API_KEY: 'sk-${KEY}' } }) } } },
    { KEY: 'SeCrEt\u0000' },
  );
  expect(err.path).toBe('agents.defaults.runner.env.API_KEY');
  expect(err.message).not.toContain('SeCrEt');
});

// A variable's name is a C string too: Node refuses a NUL in it as in a value, and every spawn
// failed. Named by the env setting: the name itself is not printed (it holds the NUL).
it("a NUL in an env variable's name is refused, naming the env setting, not the name or value", () => {
  const err = refusal({
    agents: {
      list: [{ id: 'ops', runner: command({ env: { 'API_SeCrEt\u0000KEY': 'sk-SeCrEt' } }) }],
    },
  });
  expect(err.path).toBe('agents.list.0.runner.env');
  expect(err.message).not.toContain('SeCrEt');
  expect(err.message).not.toContain('\u0000');
});

it.each([
  ['an empty env value', { EMPTY: '' }],
  ['spaces, tabs and line breaks', { PROMPT: ' two\tlines\n here ' }],
])('%s loads (only a NUL cannot be carried)', (_name, env) => {
  const raw = { hooks, agents: { defaults: { runner: command({ env }) } } };
  expect(() => resolveConfig(raw, { ...base, env: {} })).not.toThrow();
});

it('check refuses a NUL in an env value from a JSON file, naming the setting', async () => {
  const { dir, cleanup } = tempDir('hookgate-env-nul-');
  try {
    const file = writeConfig(
      dir,
      JSON.stringify({
        server: { host: '127.0.0.1', port: 0 },
        hooks,
        agents: {
          defaults: {
            runner: command({
              argv: ['/bin/sh', '-c', 'cat'],
              env: { API_KEY: 'sk-SeCrEt\u0000x' },
            }),
          },
        },
        runtime: { dataDir: './data', heartbeat: { every: 'off' } },
      }),
      'hookgate.json',
    );
    const result = await runHookgate(['check', '--config', file], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('agents.defaults.runner.env.API_KEY:');
    expect(`${result.stdout}\n${result.stderr}`).not.toContain('SeCrEt');
  } finally {
    cleanup();
  }
}, 60_000);
