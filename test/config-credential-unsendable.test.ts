import { afterAll, afterEach, expect, it } from 'vitest';
import { compileConfig } from '../engine/config/compile.ts';
import { ConfigError, resolveConfig } from '../engine/config.ts';
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
// Telegram's own example token (core.telegram.org/bots): the shape BotFather issues.
const TELEGRAM = '110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const TEAMS = {
  appId: '00000000-0000-0000-0000-000000000001',
  tenantId: 'contoso.onmicrosoft.com',
};
const TEAMS_URL = 'https://smba.trafficmanager.net/teams/';
const runner = (extra: Record<string, unknown>) => ({
  agents: { defaults: { runner: { kind: 'http', url: 'http://127.0.0.1:9/run', ...extra } } },
});
const gmail = (extra: Record<string, unknown>) => ({
  hooks: { ...hooks, gmail: { push: { mode: 'token' }, ...extra } },
});

function refusal(raw: Record<string, unknown>, env: Record<string, string> = {}): ConfigError {
  return configRefusal({ hooks, ...raw }, base, env);
}

type Refused = [setting: string, raw: Record<string, unknown>, secret: string];

// Each value holds the text `SeCrEt`, which must never be in the error.
const REFUSED: Refused[] = [
  [
    'channels.telegram.botToken',
    { channels: { telegram: { botToken: '110201543:AAH SeCrEt' } } },
    'SeCrEt',
  ],
  [
    'channels.telegram.botToken',
    { channels: { telegram: { botToken: `${TELEGRAM}SeCrEt\n` } } },
    'SeCrEt',
  ],
  // The Bot API answers 401 to any token that is not `<bot id>:<secret>` without a /.
  [
    'channels.telegram.botToken',
    { channels: { telegram: { botToken: 'AAHdqTcvSeCrEt' } } },
    'SeCrEt',
  ],
  [
    'channels.telegram.botToken',
    { channels: { telegram: { botToken: '110201543:AAH/SeCrEt' } } },
    'SeCrEt',
  ],
  [
    'channels.discord.botToken',
    { channels: { discord: { botToken: 'MTA5.SeCrEt\nx' } } },
    'SeCrEt',
  ],
  ['channels.slack.botToken', { channels: { slack: { botToken: 'xoxb-1 SeCrEt' } } }, 'SeCrEt'],
  [
    'channels.whatsapp.accessToken',
    { channels: { whatsapp: { phoneNumberId: '1234567890', accessToken: 'EAAG SeCrEt' } } },
    'SeCrEt',
  ],
  [
    'channels.whatsapp.phoneNumberId',
    { channels: { whatsapp: { phoneNumberId: '123 SeCrEt', accessToken: 'EAAG' } } },
    'SeCrEt',
  ],
  [
    'channels.mattermost.token',
    { channels: { mattermost: { url: 'https://chat.example.com', token: 'SeCrEt\tx' } } },
    'SeCrEt',
  ],
  [
    'channels.imessage.password',
    { channels: { imessage: { url: 'http://127.0.0.1:1234', password: 'SeCrEt\r' } } },
    'SeCrEt',
  ],
  [
    'channels.msteams.appPassword',
    { channels: { msteams: { ...TEAMS, serviceUrl: TEAMS_URL, appPassword: 'Abc~SeCrEt\n' } } },
    'SeCrEt',
  ],
  [
    'channels.msteams.tenantId',
    {
      channels: {
        msteams: { ...TEAMS, serviceUrl: TEAMS_URL, appPassword: 'p', tenantId: 'SeCrEt tenant' },
      },
    },
    'SeCrEt',
  ],
  [
    'channels.signal.url',
    { channels: { signal: { url: 'http://127.0.0.1:8080/SeCrEt\u0000', number: '+15550001111' } } },
    'SeCrEt',
  ],
  [
    'agents.defaults.runner.headers.authorization',
    runner({ headers: { authorization: 'Bearer sk-SeCrEt\r\n' } }),
    'SeCrEt',
  ],
  [
    'agents.defaults.runner.headers.x-api-key',
    runner({ headers: { 'x-api-key': ' SeCrEt' } }),
    'SeCrEt',
  ],
  [
    'agents.defaults.runner.headers.x api key',
    runner({ headers: { 'x api key': 'SeCrEt' } }),
    'SeCrEt',
  ],
  ['gateway.token', { gateway: { token: 'SeCrEt\n' } }, 'SeCrEt'],
  [
    'hooks.github.auth.secret',
    { hooks: { ...hooks, github: { auth: { secret: 'SeCrEt\r' } } } },
    'SeCrEt',
  ],
  [
    'hooks.stripe.auth.secrets.1',
    { hooks: { ...hooks, stripe: { auth: { secrets: ['whsec_a', 'whsec_SeCrEt\u0007'] } } } },
    'SeCrEt',
  ],
  ['hooks.gmail.pushToken', gmail({ pushToken: 'push-token-SeCrEt-0123\n' }), 'SeCrEt'],
  [
    'hooks.gmail.oauth.clientSecret',
    gmail({ oauth: { clientId: 'id', clientSecret: 'GOCSPX-SeCrEt\n' } }),
    'SeCrEt',
  ],
  [
    'hooks.gmail.oauth.refreshToken',
    gmail({ oauth: { clientId: 'id', refreshToken: '1//SeCrEt\u00e9' } }),
    'SeCrEt',
  ],
];

it.each(REFUSED)(
  '%s that cannot be sent is refused, naming it and not its value',
  (setting, raw, secret) => {
    const err = refusal(raw);
    expect(err.path).toBe(setting);
    expect(err.message).not.toContain(secret);
  },
);

it("a telegram token from ${VAR} is checked after substitution (a CRLF env file's \\r)", () => {
  const err = refusal(
    { channels: { telegram: { botToken: '${TELEGRAM_BOT_TOKEN}' } } },
    { TELEGRAM_BOT_TOKEN: `${TELEGRAM}\r` },
  );
  expect(err.path).toBe('channels.telegram.botToken');
  expect(err.message).not.toContain('AAHdq');
});

it('a runner header from inside a longer value with ${VAR} is checked after substitution', () => {
  const err = refusal(runner({ headers: { authorization: 'Bearer ${KEY}' } }), {
    KEY: 'sk-SeCrEt\n',
  });
  expect(err.path).toBe('agents.defaults.runner.headers.authorization');
  expect(err.message).not.toContain('SeCrEt');
});

it.each([
  ['telegram', { telegram: { botToken: TELEGRAM } }],
  [
    'telegram (a local Bot API server, a bot id of 17 digits)',
    { telegram: { botToken: '12345678901234567:x-_Y' } },
  ],
  ['slack', { slack: { botToken: 'xoxb-1234-5678-AbCdEf' } }],
  ['discord', { discord: { botToken: 'MTA5ODc2.GxYz12.abc_-DEF' } }],
  [
    'imessage (a chosen password with spaces)',
    { imessage: { url: 'http://127.0.0.1:1234', password: 'correct horse battery staple' } },
  ],
  [
    'msteams (an Entra client secret)',
    { msteams: { ...TEAMS, serviceUrl: TEAMS_URL, appPassword: 'Q1w8Q~abc.DEF_ghi-jkl' } },
  ],
])('what %s really issues loads', (_name, channels) => {
  expect(() => resolveConfig({ hooks, channels }, { ...base, env: {} })).not.toThrow();
});

it.each([
  [
    'a runner header with inner spaces',
    runner({ headers: { authorization: 'Bearer sk-proj-abc' } }),
  ],
  [
    'a GitHub secret typed as a phrase',
    { hooks: { ...hooks, github: { auth: { secret: 'my webhook secret' } } } },
  ],
  [
    'Google OAuth settings',
    gmail({
      oauth: {
        clientId: '1-a.apps.googleusercontent.com',
        clientSecret: 'GOCSPX-a_b',
        refreshToken: '1//0g-a_b',
      },
    }),
  ],
])('%s loads', (_name, raw) => {
  expect(() => resolveConfig({ hooks, ...raw }, { ...base, env: {} })).not.toThrow();
});

it('an openai runner whose apiKeyEnv names a variable holding a line break is refused', () => {
  const name = 'HOOKGATE_TEST_UNSENDABLE_KEY';
  process.env[name] = 'sk-SeCrEt\n';
  try {
    const loaded = resolveConfig(
      {
        hooks,
        agents: {
          defaults: {
            runner: { kind: 'openai', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: name },
          },
        },
      },
      { ...base, env: {} },
    );
    let caught: unknown;
    try {
      compileConfig(loaded);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).path).toBe('agents.defaults.runner.apiKeyEnv');
    expect((caught as ConfigError).message).toContain(name);
    expect((caught as ConfigError).message).not.toContain('SeCrEt');
  } finally {
    delete process.env[name];
  }
});

it('check and serve refuse a telegram token with a space from ${VAR}, naming the setting', async () => {
  const { dir, cleanup } = tempDir('hookgate-cred-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks: { enabled: true, token: ${TOKEN} }
channels: { telegram: { botToken: \${TG_TOKEN} } }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    const env = { TG_TOKEN: '110201543:AAH SeCrEt' };
    await expectCheckAndServeRefuse(dir, file, {
      setting: 'channels.telegram.botToken',
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

it('a reload bringing an unsendable token is refused and the running config keeps serving', async () => {
  await expectReloadRefused(cleanups, {
    fileName: 'hookgate.yaml',
    text: (token: string, botToken: string) =>
      [
        'server: { host: 127.0.0.1, port: 0 }',
        `hooks: { enabled: true, token: ${token} }`,
        `channels: { telegram: { botToken: "${botToken}" } }`,
        'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
        '',
      ].join('\n'),
    good: TELEGRAM,
    bad: '110201543:AAH SeCrEt',
    setting: 'channels.telegram.botToken',
    secret: 'SeCrEt',
  });
});
