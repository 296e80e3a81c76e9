/**
 * `hooks.gmail.hookUrl` (OpenClaw's hook URL, accepted so its block pastes in) and
 * `hooks.gmail.push.audience` (compared exactly with the audience Google signs into each push's
 * token) refuse what they cannot be, the three ways a config loads: a hookUrl that is not an
 * absolute http(s) URL, an audience with a control character or white space at either end (a
 * line ending carried in from a CRLF env file: every push would be refused 401). The error
 * names the setting, never the value.
 */
import { afterAll, afterEach, expect, it } from 'vitest';
import { resolveConfig } from '../engine/config.ts';
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
const gmail = (extra: Record<string, unknown>) => ({ hooks: { ...hooks, gmail: extra } });
const HOOK_URL = 'hooks.gmail.hookUrl';
const AUDIENCE = 'hooks.gmail.push.audience';
// The config putting `value` in `setting`.
const place = (setting: string, value: string) =>
  setting === HOOK_URL
    ? gmail({ hookUrl: value })
    : gmail({ push: { mode: 'oidc', audience: value } });

// Each holds the text `SeCrEt`, which must never be in the error.
const REFUSED: Array<[setting: string, value: string]> = [
  [HOOK_URL, 'hooks/gmail/SeCrEt'],
  [HOOK_URL, '/hooks/gmail?token=SeCrEt'],
  [HOOK_URL, '127.0.0.1:18789/hooks/SeCrEt'],
  [HOOK_URL, 'ftp://127.0.0.1/SeCrEt'],
  [HOOK_URL, 'http://[::1/SeCrEt'],
  [HOOK_URL, 'http://127.0.0.1:18789/hooks/SeCrEt\r'],
  [AUDIENCE, 'https://hooks.example.com/SeCrEt\r'],
  [AUDIENCE, 'https://hooks.example.com/SeCrEt\n'],
  [AUDIENCE, ' https://hooks.example.com/SeCrEt'],
  [AUDIENCE, 'https://hooks.example.com/SeCrEt '],
  [AUDIENCE, 'SeCrEt\u0000audience'],
  [AUDIENCE, 'SeCrEt\u0085'],
];

it.each(REFUSED)('%s = %j is refused, naming the setting and not its value', (setting, value) => {
  const err = configRefusal(place(setting, value), base);
  expect(err.path).toBe(setting);
  expect(err.message).not.toContain('SeCrEt');
});

it.each([
  [HOOK_URL, 'http://127.0.0.1:18789/hooks/gmail'],
  [HOOK_URL, 'https://gateway.example.com/hooks/gmail?x=1'],
  // Pub/Sub's default audience is the push endpoint; any other case-sensitive string is allowed.
  [AUDIENCE, 'https://hooks.example.com/gmail-pubsub'],
  [AUDIENCE, 'gmail-push'],
  [AUDIENCE, 'my push audience'],
  [AUDIENCE, 'https://hooks.example.com/écoute'],
])('%s = %j loads', (setting, value) => {
  expect(() => resolveConfig(place(setting, value), { ...base, env: {} })).not.toThrow();
});

it('check and serve refuse an audience from ${VAR} with a CRLF line ending, naming the setting', async () => {
  const { dir, cleanup } = tempDir('hookgate-gmail-shape-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${TOKEN}
  gmail: { push: { mode: oidc, audience: \${PUSH_AUDIENCE} } }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    await expectCheckAndServeRefuse(dir, file, {
      setting: 'hooks.gmail.push.audience',
      secret: 'SeCrEt',
      env: { PUSH_AUDIENCE: 'https://hooks.example.com/SeCrEt\r' },
    });
  } finally {
    cleanup();
  }
}, 60_000);

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('a reload bringing a hookUrl that is no URL is refused and the running config keeps serving', async () => {
  await expectReloadRefused(cleanups, {
    fileName: 'hookgate.yaml',
    text: (token: string, url: string) =>
      [
        'server: { host: 127.0.0.1, port: 0 }',
        `hooks: { enabled: true, token: ${token}, gmail: { hookUrl: "${url}" } }`,
        'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
        '',
      ].join('\n'),
    good: 'http://127.0.0.1:18789/hooks/gmail',
    bad: 'hooks/gmail?token=SeCrEt',
    setting: 'hooks.gmail.hookUrl',
    secret: 'SeCrEt',
  });
});
