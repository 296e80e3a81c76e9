/**
 * Flags that say two things at once, over the real command line. node's parseArgs keeps the
 * last of a flag given twice (`actions --limit 5 --limit 9` listed 9) and the last of a flag
 * and its negation (`gmail setup --include-body --no-include-body` wrote `includeBody: false`),
 * and the command ran as if it had been given only that. Each is now a usage error (exit 2,
 * `hookgate: <message>`, nothing done) naming the flags and never their values, which may be
 * secrets. A flag meant to repeat (`test --header`) still repeats.
 */
import { readFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { killAll, runHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

it('a single-value flag given twice is a usage error naming the flag, never its values', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-repeat-');
  const [first, second] = ['first-secret-value-7f3a', 'second-secret-value-9c1e'];
  try {
    const cases: Array<[string[], string]> = [
      [['serve', '--config', first, '--config', second], 'serve: --config'],
      [['actions', '--limit', '5', '--limit', '9', '--data-dir', dir], 'actions: --limit'],
      [['runs', '--state', 'dead', '--state', 'done', '--data-dir', dir], 'runs: --state'],
      [['events', '--session', first, '--data-dir', dir, '--session', second], 'events: --session'],
      [['heartbeats', '--data-dir', dir, '--data-dir', second], 'heartbeats: --data-dir'],
      [
        ['retry', 'some-id', '--failed', '--data-dir', dir, '--data-dir', second],
        'retry: --data-dir',
      ],
      [['check', '--config', first, `--config=${second}`], 'check: --config'],
      [['test', 'wake', '--payload', first, '--payload', second], 'test: --payload'],
      [['gmail', 'status', '--config', first, '--config', second], 'gmail status: --config'],
    ];
    for (const [args, named] of cases) {
      const result = await runHookgate(args, { cwd: dir });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toBe(
        `hookgate: ${named} is given more than once (give it once)\n`,
      );
      expect(result.stdout, args.join(' ')).toBe('');
    }
  } finally {
    cleanup();
  }
}, 120_000);

it('--include-body with --no-include-body (either order) is a usage error naming both', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-contradict-');
  const config = writeConfig(dir, 'hooks:\n  enabled: true\nruntime: { dataDir: ./data }\n');
  const setup = [
    ...['gmail', 'setup', '--config', config, '--account', 'me@example.com'],
    ...['--project', 'my-project-1', '--project-number', '123456', '--topic', 'gmail-watch'],
    ...['--push-endpoint', 'https://hooks.example.com/gmail-pubsub', '--client-id', 'c-1'],
    '--no-consent',
  ];
  try {
    for (const [one, other] of [
      ['--include-body', '--no-include-body'],
      ['--no-include-body', '--include-body'],
    ]) {
      const result = await runHookgate([...setup, one as string, other as string], { cwd: dir });
      expect(result.code, `${one} ${other}`).toBe(2);
      expect(result.stderr).toBe(
        `hookgate: gmail setup: ${one} and ${other} contradict each other (give one of them)\n`,
      );
      expect(result.stdout).toBe('');
      // Nothing was set up: the config is as the operator wrote it.
      expect(readFileSync(config, 'utf8')).not.toContain('gmail');
    }
  } finally {
    cleanup();
  }
}, 60_000);

it('a flag meant to repeat (test --header) still repeats', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-repeat-');
  // The mapping matches only when both headers arrive.
  const config = writeConfig(
    dir,
    `hooks:
  enabled: true
  token: repeat-test-token-0123456789abcdef
  mappings:
    - id: both-headers
      match:
        path: pair
        when: { and: [ { "==": [ { var: "headers.x-one" }, "1" ] }, { "==": [ { var: "headers.x-two" }, "2" ] } ] }
      action: wake
      textTemplate: both
`,
  );
  const payload = writeConfig(dir, '{}', 'payload.json');
  try {
    const result = await runHookgate(
      [
        ...['test', 'pair', '--config', config, '--payload', payload],
        ...['--header', 'x-one: 1', '--header', 'x-two: 2'],
      ],
      { cwd: dir },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('both-headers: matched');
  } finally {
    cleanup();
  }
}, 60_000);

it('a switch given twice (actions --json --json) says the same thing and is taken', async () => {
  const { dir, cleanup } = tempDir('hookgate-cli-switch-');
  try {
    const result = await runHookgate(['actions', '--json', '--json', '--data-dir', dir], {
      cwd: dir,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // One action per line: an empty store lists none.
    expect(result.stdout).toBe('');
  } finally {
    cleanup();
  }
}, 60_000);
