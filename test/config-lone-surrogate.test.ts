/**
 * A lone UTF-16 surrogate (`"\uD800"` in a JSON config or a YAML double-quoted string) in a
 * setting has no UTF-8 form: a password, a secret, a header or a prompt holding one loaded
 * without a word and every send failed or sent U+FFFD in its place. No sane setting holds one,
 * so every string of the configuration, keys included, is checked at load (boot, check, reload,
 * after `${VAR}` substitution), as request data is (String.prototype.isWellFormed), and the
 * error names the setting, never the value.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { killAll, runHookgate, writeConfig } from './helpers/process.ts';

afterAll(killAll);

const base = { baseDir: '/srv/hookgate', dataDir: '/tmp/hookgate-unused' };
const hooks = { enabled: true, token: TOKEN };
const command = (extra: Record<string, unknown>) => ({
  agents: { defaults: { runner: { kind: 'command', argv: ['./agent.sh'], ...extra } } },
});

function refusal(raw: Record<string, unknown>, env: Record<string, string> = {}): ConfigError {
  try {
    resolveConfig({ hooks, ...raw }, { ...base, env });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('config was accepted');
}

// Each value holds the text `SeCrEt`, which must never be in the error.
const REFUSED: Array<[setting: string, raw: Record<string, unknown>]> = [
  [
    'channels.imessage.password',
    { channels: { imessage: { url: 'http://127.0.0.1:1234', password: 'SeCrEt\uD800' } } },
  ],
  [
    'hooks.github.auth.secret',
    { hooks: { ...hooks, github: { auth: { secret: 'SeCrEt\uDC00x' } } } },
  ],
  [
    'hooks.mappings.0.auth.secrets.1',
    {
      hooks: {
        ...hooks,
        mappings: [
          {
            match: { path: 'x' },
            action: 'wake',
            text: 'x',
            auth: { scheme: 'hmac', secrets: ['a', '\uDFFFSeCrEt'] },
          },
        ],
      },
    },
  ],
  ['agents.defaults.runner.env.API_KEY', command({ env: { API_KEY: 'sk-SeCrEt\uD83D' } })],
  ['agents.defaults.runner.argv.1', command({ argv: ['./agent.sh', '--key=SeCrEt\uD800'] })],
  ['runtime.heartbeat.prompt', { runtime: { heartbeat: { prompt: 'SeCrEt \uD83D review' } } }],
  [
    'hooks.mappings.0.text',
    {
      hooks: {
        ...hooks,
        mappings: [{ match: { path: 'x' }, action: 'wake', text: 'SeCrEt\uDE00' }],
      },
    },
  ],
  // A key holding one: the error names where the key is, not the key.
  ['agents.defaults.runner.env', command({ env: { 'SeCrEt\uD800': 'x' } })],
];

it.each(REFUSED)(
  '%s holding a lone surrogate is refused, naming it and not its value',
  (setting, raw) => {
    const err = refusal(raw);
    expect(err.path).toBe(setting);
    expect(err.message).not.toContain('SeCrEt');
    expect(err.message.isWellFormed()).toBe(true);
  },
);

it('a lone surrogate from ${VAR} is checked after substitution', () => {
  const err = refusal(
    { channels: { imessage: { url: 'http://127.0.0.1:1234', password: 'pw-${PW}' } } },
    { PW: 'SeCrEt\uDBFF' },
  );
  expect(err.path).toBe('channels.imessage.password');
  expect(err.message).not.toContain('SeCrEt');
});

it.each([
  ['a surrogate pair (an emoji)', { runtime: { heartbeat: { prompt: 'Heartbeat \uD83D\uDE00' } } }],
  [
    'a password with an emoji',
    { channels: { imessage: { url: 'http://127.0.0.1:1234', password: 'horse \uD83D\uDC0E' } } },
  ],
])('%s loads', (_name, raw) => {
  expect(() => resolveConfig({ hooks, ...raw }, { ...base, env: {} })).not.toThrow();
});

it('check and serve refuse a YAML double-quoted "\\uD800" in a password, naming the setting', async () => {
  const { dir, cleanup } = tempDir('hookgate-surrogate-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks: { enabled: true, token: ${TOKEN} }
channels: { imessage: { url: "http://127.0.0.1:1234", password: "SeCrEt\\uD800" } }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    for (const args of [
      ['check', '--config', file],
      ['--config', file],
    ]) {
      const result = await runHookgate(args, { cwd: dir });
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr, args[0]).toContain('channels.imessage.password:');
      expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain('SeCrEt');
    }
  } finally {
    cleanup();
  }
}, 60_000);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a reload bringing a lone surrogate (JSON) is refused and the running config keeps serving', async () => {
  const temp = tempDir('hookgate-surrogate-reload-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.json');
  // The JSON text's own escape: a lone surrogate as a JSON file carries it.
  const text = (token: string, password: string) =>
    `{"server": {"host": "127.0.0.1", "port": 0},
 "hooks": {"enabled": true, "token": "${token}"},
 "channels": {"imessage": {"url": "http://127.0.0.1:1234", "password": "${password}"}},
 "runtime": {"dataDir": "./data", "heartbeat": {"every": "off"}}}
`;
  writeFileSync(file, text(TOKEN, 'correct horse'));
  const hookgate = await startHookgate(loadConfigFile(file, {}), {
    logger: createLogger('silent'),
    runtime: false,
    env: {},
  });
  cleanups.push(() => hookgate.close());
  const NEW_TOKEN = 'new-hook-token-0123456789abcdef';
  writeFileSync(file, text(NEW_TOKEN, 'SeCrEt\\uD800'));
  const outcome = await hookgate.reload('test');
  expect(outcome.ok).toBe(false);
  expect(outcome.error).toContain('channels.imessage.password:');
  expect(JSON.stringify(outcome)).not.toContain('SeCrEt');
  const wake = (token: string) =>
    fetch(`${hookgate.url}/hooks/wake`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"text":"x"}',
    });
  expect((await wake(TOKEN)).status).toBe(200);
  expect((await wake(NEW_TOKEN)).status).toBe(401);
});
