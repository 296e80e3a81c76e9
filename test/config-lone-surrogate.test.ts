import { afterAll, afterEach, expect, it } from 'vitest';
import { type ConfigError, resolveConfig } from '../engine/config.ts';
import { TOKEN, tempDir } from './helpers/hookgate.ts';
import { killAll, writeConfig } from './helpers/process.ts';
import {
  configRefusal,
  expectCheckAndServeRefuse,
  expectReloadRefused,
} from './helpers/refused-config.ts';

afterAll(killAll);

const base = { baseDir: '/srv/hookgate', dataDir: '/tmp/hookgate-unused' };
const hooks = { enabled: true, token: TOKEN };
const command = (extra: Record<string, unknown>) => ({
  agents: { defaults: { runner: { kind: 'command', argv: ['./agent.sh'], ...extra } } },
});

function refusal(raw: Record<string, unknown>, env: Record<string, string> = {}): ConfigError {
  return configRefusal({ hooks, ...raw }, base, env);
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
    await expectCheckAndServeRefuse(dir, file, {
      setting: 'channels.imessage.password',
      secret: 'SeCrEt',
    });
  } finally {
    cleanup();
  }
}, 60_000);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a reload bringing a lone surrogate (JSON) is refused and the running config keeps serving', async () => {
  // The JSON text's own escape: a lone surrogate as a JSON file carries it.
  await expectReloadRefused(cleanups, {
    fileName: 'hookgate.json',
    text: (token: string, password: string) =>
      `{"server": {"host": "127.0.0.1", "port": 0},
 "hooks": {"enabled": true, "token": "${token}"},
 "channels": {"imessage": {"url": "http://127.0.0.1:1234", "password": "${password}"}},
 "runtime": {"dataDir": "./data", "heartbeat": {"every": "off"}}}
`,
    good: 'correct horse',
    bad: 'SeCrEt\\uD800',
    setting: 'channels.imessage.password',
    secret: 'SeCrEt',
  });
});
