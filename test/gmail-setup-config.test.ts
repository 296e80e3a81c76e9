/**
 * writeGmailSetup: what `hookgate gmail setup` does to a config file. The operator's comments,
 * key order and references survive, running it twice changes nothing, secrets never land in
 * the file, and the file it writes boots.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, loadConfigFile, shieldReferences } from '../engine/config.ts';
import { type GmailSetupOptions, writeGmailSetup } from '../engine/gmail/setup-config.ts';

const EXISTING = `# hookgate for the team
server:
  port: 8787 # behind the proxy

hooks:
  # on for GitHub
  enabled: false
  token: \${HOOKS_TOKEN}
  presets: [github]
  github:
    auth: { secret: \${GITHUB_SECRET} }

runtime:
  dataDir: ./data # kept on the volume
`;

const OPTIONS: GmailSetupOptions = {
  account: 'me@example.com',
  topic: 'projects/my-project/topics/gog-gmail-watch',
  subscription: 'gog-gmail-watch-push',
  includeBody: true,
  maxBytes: 20_000,
  serve: { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
  push: { mode: 'oidc', audience: 'https://mail.example.com/gmail-pubsub' },
  oauth: { clientId: '123-abc.apps.googleusercontent.com' },
  pushToken: 'given-push-token-0123456789',
};

// The file's values as the loader sees them, references left as written.
function read(text: string): Record<string, Record<string, Record<string, unknown>>> {
  const json = JSON.stringify(parse(shieldReferences(text)) ?? {});
  return JSON.parse(json.replace(/hookgate\.env\.(\w+)\.placeholder/g, '${$1}'));
}

describe('writeGmailSetup: an existing config', () => {
  const result = writeGmailSetup(EXISTING, OPTIONS);

  it('keeps every comment and the order of existing keys', () => {
    for (const comment of ['# hookgate for the team', '# behind the proxy', '# on for GitHub']) {
      expect(result.text).toContain(comment);
    }
    expect(result.text).toContain('# kept on the volume');
    const keys = [...result.text.matchAll(/^(\w+):/gm)].map((m) => m[1]);
    expect(keys).toEqual(['server', 'hooks', 'runtime']);
    const hooksKeys = Object.keys(read(result.text)['hooks']!);
    expect(hooksKeys).toEqual(['enabled', 'token', 'presets', 'github', 'gmail']);
  });

  it('turns hooks on, adds the preset, and writes hooks.gmail', () => {
    const hooks = read(result.text)['hooks']!;
    expect(hooks['enabled']).toBe(true);
    expect(hooks['presets']).toEqual(['github', 'gmail']);
    expect(hooks['gmail']).toEqual({
      account: 'me@example.com',
      topic: 'projects/my-project/topics/gog-gmail-watch',
      subscription: 'gog-gmail-watch-push',
      includeBody: true,
      maxBytes: 20_000,
      serve: { bind: '127.0.0.1', port: 8788, path: '/gmail-pubsub' },
      oauth: { clientId: '123-abc.apps.googleusercontent.com' },
      push: { mode: 'oidc', audience: 'https://mail.example.com/gmail-pubsub' },
      pushToken: 'given-push-token-0123456789',
    });
    expect(result).toMatchObject({ changed: true, conflicts: [], plainSecrets: [] });
  });

  it('keeps the ${VAR} references it did not need to touch', () => {
    expect(result.text).toContain('token: ${HOOKS_TOKEN}');
    expect(result.text).toContain('auth: { secret: ${GITHUB_SECRET} }');
  });

  it('changes nothing when run twice', () => {
    const again = writeGmailSetup(result.text, OPTIONS);
    expect(again).toMatchObject({ text: result.text, changed: false });
    expect(again.generatedPushToken).toBeUndefined();
  });

  it('writes a file that boots', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hookgate-gmail-setup-'));
    const file = path.join(dir, 'hookgate.yaml');
    writeFileSync(file, result.text);
    const env = { HOOKS_TOKEN: 'a-hook-token-of-some-length', GITHUB_SECRET: 'gh-secret' };
    const { config } = loadConfigFile(file, env);
    expect(config.hooks.gmail).toMatchObject({ account: 'me@example.com', label: 'INBOX' });
    expect(config.hooks.presets).toEqual(['github', 'gmail']);
  });
});

describe('writeGmailSetup: presets and references', () => {
  it.each([
    ['a flow list', 'hooks:\n  presets: [gmail, github]\n'],
    ['a block list', 'hooks:\n  presets:\n    - github\n    - gmail\n'],
  ])('does not add gmail twice to %s', (_name, text) => {
    const presets = read(writeGmailSetup(text, OPTIONS).text)['hooks']!['presets'];
    expect(presets).toEqual(
      text.indexOf('gmail') < text.indexOf('github') ? ['gmail', 'github'] : ['github', 'gmail'],
    );
  });

  it.each([
    ['unset', {}, [{ path: 'hooks.gmail.account', reference: '${GMAIL_ACCOUNT}' }]],
    [
      'a different address',
      { GMAIL_ACCOUNT: 'other@example.com' },
      [{ path: 'hooks.gmail.account', reference: '${GMAIL_ACCOUNT}' }],
    ],
    ['the same address', { GMAIL_ACCOUNT: 'me@example.com' }, []],
  ])('keeps a ${VAR} account when the variable is %s', (_name, env, conflicts) => {
    const text = 'hooks:\n  gmail:\n    account: ${GMAIL_ACCOUNT}\n';
    const result = writeGmailSetup(text, { ...OPTIONS, env });
    expect(result.text).toContain('account: ${GMAIL_ACCOUNT}');
    expect(result.conflicts).toEqual(conflicts);
  });

  it('never replaces a referenced push token with a plain one', () => {
    const text =
      'hooks:\n  gmail:\n    pushToken: "${GMAIL_PUSH_TOKEN}"\n    push: { mode: token }\n';
    const result = writeGmailSetup(text, {
      ...OPTIONS,
      push: undefined,
      pushToken: 'plain-secret-value-123',
    });
    expect(result.text).toContain('pushToken: "${GMAIL_PUSH_TOKEN}"');
    expect(result.text).not.toContain('plain-secret-value-123');
    expect(result.generatedPushToken).toBeUndefined();
    expect(result.conflicts).toEqual([
      { path: 'hooks.gmail.pushToken', reference: '${GMAIL_PUSH_TOKEN}' },
    ]);
  });

  it('keeps a reference inside a longer value', () => {
    const text = 'hooks:\n  gmail:\n    account: ${GMAIL_USER}@example.com\n';
    const result = writeGmailSetup(text, { ...OPTIONS, env: { GMAIL_USER: 'me' } });
    expect(result.text).toContain('account: ${GMAIL_USER}@example.com');
    expect(result.conflicts).toEqual([]);
  });
});

describe('writeGmailSetup: secrets', () => {
  it.each(['token', 'oidc'] as const)(
    'generates a push token in %s mode when none is configured or given',
    (mode) => {
      const { pushToken: _given, ...options } = OPTIONS;
      const result = writeGmailSetup('', { ...options, push: { mode } });
      expect(result.generatedPushToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(read(result.text)['hooks']!['gmail']!['pushToken']).toBe(result.generatedPushToken);
    },
  );

  it.each([
    [
      'a given token',
      { push: { mode: 'token' as const }, pushToken: 'given-token-0123456789' },
      '',
    ],
    [
      'a configured token',
      { push: { mode: 'token' as const } },
      'hooks:\n  gmail:\n    pushToken: configured-0123456789\n',
    ],
  ])('generates no push token with %s', (_name, options, text) => {
    expect(writeGmailSetup(text, { ...OPTIONS, ...options }).generatedPushToken).toBeUndefined();
  });

  it('never writes a client secret or refresh token, even when handed one', () => {
    const options = {
      ...OPTIONS,
      oauth: { clientId: 'id', clientSecret: 'GOCSPX-secret', refreshToken: '1//refresh' },
    };
    const result = writeGmailSetup('', options as GmailSetupOptions);
    expect(result.text).not.toContain('GOCSPX-secret');
    expect(result.text).not.toContain('1//refresh');
  });

  it('points out OAuth secrets kept as plain text in the file', () => {
    const text =
      'hooks:\n  gmail:\n    oauth:\n      clientSecret: GOCSPX-plain\n      refreshToken: ${GMAIL_REFRESH}\n';
    expect(writeGmailSetup(text, OPTIONS).plainSecrets).toEqual(['hooks.gmail.oauth.clientSecret']);
  });
});

describe('writeGmailSetup: file shapes', () => {
  it.each([
    ['an empty file', ''],
    ['a file of comments only', '# nothing yet\n'],
    ['a config without hooks', 'server:\n  port: 8787\n'],
    ['hooks left empty', 'hooks:\n'],
  ])('builds the block in %s', (_name, text) => {
    const result = writeGmailSetup(text, { account: 'me@example.com' });
    expect(read(result.text)['hooks']).toEqual({
      enabled: true,
      presets: ['gmail'],
      gmail: { account: 'me@example.com', pushToken: result.generatedPushToken },
    });
    if (text.startsWith('#')) expect(result.text).toContain('# nothing yet');
  });

  it('keeps the file indentation', () => {
    const result = writeGmailSetup('server:\n    port: 8787\n', { account: 'me@example.com' });
    expect(result.text).toContain('\n    enabled: true\n');
  });

  it('keeps a JSON config JSON', () => {
    const result = writeGmailSetup('{"hooks": {"token": "${HOOKS_TOKEN}"}}', {
      account: 'me@example.com',
    });
    expect(JSON.parse(result.text)).toEqual({
      hooks: {
        token: '${HOOKS_TOKEN}',
        enabled: true,
        presets: ['gmail'],
        gmail: { account: 'me@example.com', pushToken: result.generatedPushToken },
      },
    });
  });

  it.each([
    ['invalid YAML', 'hooks: [unclosed\n', ''],
    ['duplicate keys', 'hooks: {}\nhooks: {}\n', ''],
    ['a list at the top', '- hooks\n', ''],
    ['hooks as a string', 'hooks: yes please\n', 'hooks'],
    ['presets as a string', 'hooks:\n  presets: gmail\n', 'hooks.presets'],
    ['hooks.gmail as a list', 'hooks:\n  gmail: [account]\n', 'hooks.gmail'],
    ['serve as a number', 'hooks:\n  gmail:\n    serve: 8788\n', 'hooks.gmail.serve'],
  ])('refuses %s with a ConfigError naming the place', (_name, text, where) => {
    const attempt = () => writeGmailSetup(text, OPTIONS);
    expect(attempt).toThrow(ConfigError);
    try {
      attempt();
    } catch (err) {
      expect((err as ConfigError).path).toBe(where);
    }
  });

  test.prop([
    fc.record({
      account: fc.emailAddress(),
      label: fc.constantFrom('INBOX', 'Label_12', 'IMPORTANT'),
      maxBytes: fc.integer({ min: 256, max: 1_000_000 }),
      includeBody: fc.boolean(),
      serve: fc.record({ port: fc.integer({ min: 0, max: 65_535 }) }),
    }),
  ])('round trip: the values read back, and a second run changes nothing', (options) => {
    const first = writeGmailSetup(EXISTING, options);
    expect(read(first.text)['hooks']!['gmail']).toEqual({
      ...options,
      pushToken: first.generatedPushToken,
    });
    expect(writeGmailSetup(first.text, options).changed).toBe(false);
  });
});
