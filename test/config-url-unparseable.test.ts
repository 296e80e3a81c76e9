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
const TEAMS = {
  appId: '00000000-0000-0000-0000-000000000001',
  appPassword: 'p',
  tenantId: 'contoso.onmicrosoft.com',
  serviceUrl: 'https://smba.trafficmanager.net/teams/',
};

// Each setting hookgate calls, and a config putting `url` there.
const SETTINGS: Array<[setting: string, place: (url: string) => Record<string, unknown>]> = [
  [
    'channels.whatsapp.baseUrl',
    (url) => ({ channels: { whatsapp: { phoneNumberId: '1', accessToken: 'a', baseUrl: url } } }),
  ],
  [
    'channels.telegram.baseUrl',
    (url) => ({ channels: { telegram: { botToken: '1:a', baseUrl: url } } }),
  ],
  [
    'channels.discord.baseUrl',
    (url) => ({ channels: { discord: { botToken: 'a', baseUrl: url } } }),
  ],
  ['channels.slack.baseUrl', (url) => ({ channels: { slack: { botToken: 'a', baseUrl: url } } })],
  ['channels.mattermost.url', (url) => ({ channels: { mattermost: { url, token: 'a' } } })],
  ['channels.signal.url', (url) => ({ channels: { signal: { url, number: '+15550001111' } } })],
  ['channels.imessage.url', (url) => ({ channels: { imessage: { url, password: 'a' } } })],
  [
    'channels.msteams.serviceUrl',
    (url) => ({ channels: { msteams: { ...TEAMS, serviceUrl: url } } }),
  ],
  ['channels.msteams.tokenUrl', (url) => ({ channels: { msteams: { ...TEAMS, tokenUrl: url } } })],
  [
    'agents.defaults.runner.url',
    (url) => ({ agents: { defaults: { runner: { kind: 'http', url } } } }),
  ],
  [
    'agents.defaults.runner.baseUrl',
    (url) => ({ agents: { defaults: { runner: { kind: 'openai', baseUrl: url } } } }),
  ],
  [
    'agents.list.0.runner.url',
    (url) => ({ agents: { list: [{ id: 'main', runner: { kind: 'http', url } }] } }),
  ],
  ['providers.local.baseUrl', (url) => ({ providers: { local: { baseUrl: url } } })],
  [
    'hooks.gmail.oauth.tokenUrl',
    (url) => ({ hooks: { ...hooks, gmail: { oauth: { tokenUrl: url } } } }),
  ],
  [
    'hooks.gmail.oauth.authUrl',
    (url) => ({ hooks: { ...hooks, gmail: { oauth: { authUrl: url } } } }),
  ],
  [
    'hooks.gmail.push.jwksUrl',
    (url) => ({ hooks: { ...hooks, gmail: { push: { jwksUrl: url } } } }),
  ],
  ['hooks.gmail.apiBaseUrl', (url) => ({ hooks: { ...hooks, gmail: { apiBaseUrl: url } } })],
];

// The URL shape, but no URL: each holds the text `SeCrEt`, which must never be in the error.
const UNPARSEABLE = [
  'http://user:SeCrEt@127.0.0.1:99999/run',
  'http://[::1/SeCrEt',
  'https://api.example.com:SeCrEt/v1',
  'https://exa%mple.com/?key=SeCrEt',
];

function refusal(raw: Record<string, unknown>): ConfigError {
  return configRefusal({ hooks, ...raw }, base);
}

it.each(
  SETTINGS.flatMap(([setting, place]) => UNPARSEABLE.map((url) => [setting, url, place] as const)),
)('%s = %s is refused, naming the setting and not its value', (setting, url, place) => {
  const err = refusal(place(url));
  expect(err.path).toBe(setting);
  expect(err.message).not.toContain('SeCrEt');
});

it.each(
  SETTINGS.flatMap(([setting, place]) =>
    [
      'http://[::1]:8080/run',
      'https://user:p%40ss@api.example.com:65535/v1?key=a%20b#x',
      'http://127.0.0.1:1234',
    ].map((url) => [setting, url, place] as const),
  ),
)('%s = %s loads', (_setting, url, place) => {
  expect(() => resolveConfig({ hooks, ...place(url) }, { ...base, env: {} })).not.toThrow();
});

it('check and serve refuse an unparseable URL from ${VAR}, naming the setting', async () => {
  const { dir, cleanup } = tempDir('hookgate-url-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks: { enabled: true, token: ${TOKEN} }
channels: { mattermost: { url: \${MM_URL}, token: abc } }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    const env = { MM_URL: 'https://bot:SeCrEt@chat.example.com:99999' };
    await expectCheckAndServeRefuse(dir, file, {
      setting: 'channels.mattermost.url',
      secret: 'SeCrEt',
      env,
    });
  } finally {
    cleanup();
  }
}, 60_000);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a reload bringing an unparseable URL is refused and the running config keeps serving', async () => {
  await expectReloadRefused(cleanups, {
    fileName: 'hookgate.yaml',
    text: (token: string, url: string) =>
      [
        'server: { host: 127.0.0.1, port: 0 }',
        `hooks: { enabled: true, token: ${token} }`,
        `agents: { defaults: { runner: { kind: http, url: "${url}" } } }`,
        'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
        '',
      ].join('\n'),
    good: 'http://127.0.0.1:9/run',
    bad: 'http://agent:SeCrEt@127.0.0.1:99999/run',
    setting: 'agents.defaults.runner.url',
    secret: 'SeCrEt',
  });
});
