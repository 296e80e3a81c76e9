/**
 * The operator tools over the real command line: `check` and `test`.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from './helpers/hookgate.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const fixture = (name: string) => path.join(ROOT, 'test/fixtures', name);

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(NODE, [path.join(ROOT, 'server.ts'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, HOOKGATE_CONFIG: '', ...env },
    timeout: 15_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const temp = tempDir();
afterAll(() => temp.cleanup());

function writeConfig(name: string, text: string): string {
  const file = path.join(temp.dir, name);
  writeFileSync(file, text);
  return file;
}

const good = writeConfig(
  'good.yaml',
  `hooks:
  enabled: true
  token: \${HOOKS_TOKEN}
  presets: [gmail]
  allowedSessionKeyPrefixes: ["hook:"]
  mappings:
    - id: github-push
      match:
        path: github
        when: { "==": [ { var: "headers.x-github-event" }, "push" ] }
      templates:
        message: "Push to {{payload.repository.full_name}} by {{payload.pusher.name}}"
        sessionKey: "hook:github:{{payload.repository.id}}"
      name: GitHub
    - id: github-other
      match: { path: github }
      action: wake
      textTemplate: "GitHub event"
`,
);

describe('hookgate check', () => {
  it('prints one line per route and exits 0', () => {
    const { code, stdout } = run(['check', '--config', good], { HOOKS_TOKEN: 's3cret' });
    expect(code).toBe(0);
    expect(stdout).toContain('POST /hooks/wake');
    expect(stdout).toMatch(/POST \/hooks\/github {2}github-push {2}agent .*when=\{"=="/);
    expect(stdout).toMatch(/POST \/hooks\/gmail {2}gmail {2}agent .*forEach=messages/);
    expect(stdout).not.toContain('s3cret');
  });

  it('exits 2 naming the mapping and field of a bad template', () => {
    const bad = writeConfig(
      'bad.yaml',
      'hooks:\n  enabled: true\n  token: t\n  mappings:\n    - id: broken\n      templates: { message: "{{oops" }\n',
    );
    const { code, stderr } = run(['check', '--config', bad]);
    expect(code).toBe(2);
    expect(stderr).toContain('hooks.mappings.0.templates.message');
    expect(stderr).toContain('broken');
  });

  it('a template parse error says where and what was expected, on one line', () => {
    const bad = writeConfig(
      'unclosed.yaml',
      'hooks:\n  enabled: true\n  token: t\n  mappings:\n    - id: unclosed\n      templates: { message: "hi {{#if payload.a}}" }\n',
    );
    const { code, stderr } = run(['check', '--config', bad]);
    expect(code).toBe(2);
    expect(stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^hookgate: config error: hooks\.mappings\.0\.templates\.message: \(mapping "unclosed"\) Parse error on line 1 near "hi \{\{#if payload\.a\}\}": Expecting .*, got 'EOF'$/,
      ),
    ]);
  });

  it('a YAML error gives its line and column without a dangling colon', () => {
    const bad = writeConfig('nested.yaml', 'hooks:\n  enabled: true: x\n');
    const { code, stderr } = run(['check', '--config', bad]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/cannot parse .*nested\.yaml: .* at line 2, column \d+\n/);
  });
});

describe('hookgate test', () => {
  it('shows the matching mapping, the action and the policy decisions', () => {
    const { code, stdout } = run(
      [
        'test',
        'github',
        '--config',
        good,
        '--payload',
        fixture('github-push.json'),
        '--header',
        'X-GitHub-Event: push',
      ],
      { HOOKS_TOKEN: 't' },
    );
    expect(code).toBe(0);
    expect(stdout).toContain('github-push: matched');
    expect(stdout).toContain('github-other: not tried');
    expect(stdout).toContain('session key: hook:github:1296269 (mapping)');
    expect(stdout).toContain('Push to octocat/hello-world by octocat');
    // The action reads as indented JSON, a line per field, not one escaped line.
    expect(stdout).toMatch(/^Action 1 \(agent\):\n\{\n {2}"kind": "agent",\n/m);
    expect(stdout).not.toContain('\\x0a');
  });

  it('says which condition failed', () => {
    const { stdout } = run(
      [
        'test',
        'github',
        '--config',
        good,
        '--payload',
        fixture('github-push.json'),
        '--header',
        'x-github-event:issues',
      ],
      { HOOKS_TOKEN: 't' },
    );
    expect(stdout).toContain('github-push: no: when condition is false');
    expect(stdout).toContain('github-other: matched');
  });

  it('prints one JSON document with --json and stores nothing', () => {
    const dataDir = path.join(temp.dir, 'data');
    const { code, stdout } = run(
      ['test', 'gmail', '--config', good, '--payload', fixture('gmail-batch.json'), '--json'],
      {
        HOOKS_TOKEN: 't',
      },
    );
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { status: number; actions: unknown[]; mappingId: string };
    expect(result).toMatchObject({ status: 200, mappingId: 'gmail' });
    expect(result.actions).toHaveLength(3);
    const listed = run(['actions', '--json', '--data-dir', dataDir]);
    expect(listed.stdout).toBe('');
  });

  it('exits 1 and shows the refusal for a request that would be refused', () => {
    const payload = writeConfig('bad-payload.json', '{"text": ""}');
    const { code, stdout } = run(['test', 'wake', '--config', good, '--payload', payload], {
      HOOKS_TOKEN: 't',
    });
    expect(code).toBe(1);
    expect(stdout).toContain('Refused: 400 invalid_payload');
  });

  it('exits 2, not 1 (refused), for a payload file that cannot be read', () => {
    const missing = path.join(path.dirname(good), 'no-such-payload.json');
    const { code, stdout, stderr } = run(['test', 'wake', '--config', good, '--payload', missing], {
      HOOKS_TOKEN: 't',
    });
    expect(code).toBe(2);
    expect(stderr).toContain('cannot read --payload');
    expect(stderr).toContain('ENOENT');
    expect(stdout).not.toContain('Refused');
  });

  it('a wrong token on a token route: the hint is about the hook token, not signatures', () => {
    const payload = writeConfig('wake-payload.json', '{"text": "hi"}');
    const { code, stdout } = run(
      [
        'test',
        'wake',
        '--config',
        good,
        '--payload',
        payload,
        '--header',
        'authorization: Bearer nope',
      ],
      { HOOKS_TOKEN: 't' },
    );
    expect(code).toBe(1);
    expect(stdout).toContain('Refused: 401 unauthorized');
    expect(stdout).toContain('Hint: this route takes hooks.token');
    expect(stdout).not.toContain('signed route');
  });

  it('exits 2 without a payload', () => {
    expect(run(['test', 'github', '--config', good], { HOOKS_TOKEN: 't' }).code).toBe(2);
  });
});
