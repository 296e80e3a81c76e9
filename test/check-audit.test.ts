/**
 * `hookgate check` prints the audit over the real command line: one
 * `warning: <setting>: <message>` line per risky setting, exit 0, or 1 under
 * --strict; a clean config passes --strict; a config error stays exit 2; the
 * hook token never appears in the output. With no config file, the quickstart's
 * token from HOOKGATE_TOKEN is held to the same rules as a config file's.
 */
import { describe, expect, it } from 'vitest';
import { runHookgate, useProcessFixtures, writeConfig } from './helpers/process.ts';

const temp = useProcessFixtures();
const WEAK = 'changeme-please';
const STRONG = 'b8f2c4e1a9d07f3e6c5b2a1d8e9f0c7b6a5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f';

const risky = `
server: { host: 0.0.0.0, port: 8787 }
hooks:
  enabled: true
  token: \${HOOKS_TOKEN}
  allowRequestSessionKey: true
  github: { auth: { secret: github-secret-never-shown } }
agents:
  list: [ { id: main, default: true }, { id: ops } ]
admin: { host: 127.0.0.1, port: 0, keepPayloads: true }
`;

const clean = `
server: { host: 127.0.0.1, port: 8787 }
hooks:
  enabled: true
  token: \${HOOKS_TOKEN}
  allowedSessionKeyPrefixes: ["hook:"]
  allowedAgentIds: [main, ops]
agents:
  list: [ { id: main, default: true }, { id: ops } ]
`;

const warnings = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('warning:'));

describe('hookgate check: audit warnings', () => {
  it('prints one warning line per risky setting and exits 0; --strict exits 1', async () => {
    const file = writeConfig(temp(), risky);
    const env = { HOOKS_TOKEN: WEAK };
    const plain = await runHookgate(['check', '--config', file], { env });
    expect(plain.stderr).toBe('');
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('Config OK:');
    expect(warnings(plain.stdout).map((l) => l.split(': ')[1])).toEqual([
      'server.host',
      'hooks.allowRequestSessionKey',
      'hooks.allowedSessionKeyPrefixes',
      'hooks.allowedAgentIds',
      'hooks.token',
      'admin.keepPayloads',
      'hooks.github',
    ]);
    expect(plain.stdout).not.toContain(WEAK);
    expect(plain.stdout).not.toContain('github-secret-never-shown');

    const strict = await runHookgate(['check', '--strict', '--config', file], { env });
    expect(strict.code).toBe(1);
    expect(warnings(strict.stdout)).toEqual(warnings(plain.stdout));
    expect(strict.stdout + strict.stderr).not.toContain(WEAK);
  });

  it('a config without risky settings passes --strict with no warning', async () => {
    const file = writeConfig(temp(), clean);
    const result = await runHookgate(['check', '--strict', '--config', file], {
      env: { HOOKS_TOKEN: STRONG },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(warnings(result.stdout)).toEqual([]);
  });

  it('a wake mapping that sets what only an agent run reads is warned of, naming those settings', async () => {
    const mappings = `  mappings:
    - { id: deploys, match: { path: deploys }, action: wake, text: "Deployed", agentId: ops, deliver: true, templates: { to: "{{payload.chat}}" } }
    - { id: runs, match: { path: runs }, action: agent, message: "Run", agentId: ops, deliver: true }
    - { id: plain, match: { path: plain }, action: wake, text: "Ping", mode: now, label: Pinger }
`;
    const file = writeConfig(temp(), clean.replace('agents:', `${mappings}agents:`));
    const result = await runHookgate(['check', '--strict', '--config', file], {
      env: { HOOKS_TOKEN: STRONG },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(1);
    expect(warnings(result.stdout)).toEqual([
      'warning: hooks.mappings.0: a wake mapping ignores agentId, to, deliver: a wake is only text (and a mode) for the main session; remove them, or make it an agent mapping (action: agent)',
    ]);
  });

  it('a config error is still exit 2 under --strict', async () => {
    const file = writeConfig(temp(), 'hooks: { enabled: true }\n');
    const result = await runHookgate(['check', '--strict', '--config', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('hooks.token: required when hooks.enabled is true');
  });
});

describe('hookgate check with no config file: HOOKGATE_TOKEN held to the rules of hooks.token', () => {
  const check = (args: string[], env: Record<string, string | undefined>) =>
    runHookgate(['check', ...args], { cwd: temp(), env });

  it('a weak HOOKGATE_TOKEN is warned of as a weak hooks.token is, and --strict exits 1', async () => {
    const plain = await check([], { HOOKGATE_TOKEN: WEAK });
    expect(plain.stderr).toBe('');
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('serve would run the quickstart');
    expect(warnings(plain.stdout)).toEqual([
      expect.stringMatching(/^warning: HOOKGATE_TOKEN: looks guessable /),
    ]);
    const strict = await check(['--strict'], { HOOKGATE_TOKEN: WEAK });
    expect(strict.code).toBe(1);
    expect(warnings(strict.stdout)).toEqual(warnings(plain.stdout));
    expect(plain.stdout + strict.stdout + strict.stderr).not.toContain(WEAK);
  });

  it.each([
    ['a strong HOOKGATE_TOKEN', { HOOKGATE_TOKEN: STRONG }],
    ['no HOOKGATE_TOKEN (a token is generated)', {}],
  ])('%s passes --strict with no warning', async (_name, env) => {
    const result = await check(['--strict'], env);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(warnings(result.stdout)).toEqual([]);
  });

  it('a HOOKGATE_TOKEN serve would refuse is a config error, as in a config file', async () => {
    const token = `${STRONG} `;
    const result = await check([], { HOOKGATE_TOKEN: token });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('hooks.token');
    expect(result.stdout + result.stderr).not.toContain(STRONG);
  });
});
