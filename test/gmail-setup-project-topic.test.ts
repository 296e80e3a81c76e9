/**
 * `hookgate gmail setup --project P` (README, Mail notifications): the watch needs the topic's
 * full name, `projects/<project>/topics/<topic>`, and `check` says "setup --project writes it".
 * So it does whatever names the topic: `--topic`, the file's own short name, or the default
 * `gog-gmail-watch`. A `--project` that is no project id is refused before the file is touched
 * ("otherwise nothing is written and the setting is named").
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runHookgate, useProcessFixtures } from './helpers/process.ts';

const temp = useProcessFixtures();

function configIn(dir: string, text: string): string {
  const config = path.join(dir, 'hookgate.yaml');
  writeFileSync(config, text);
  return config;
}

const base = (config: string) => [
  ...['gmail', 'setup', '--config', config, '--account', 'me@example.com'],
  ...['--client-id', 'ID', '--no-consent'],
];

describe('gmail setup --project writes the topic full name', () => {
  it.each([
    ['the default topic', 'hooks:\n  enabled: true\n', [], 'gog-gmail-watch'],
    [
      "the file's short topic",
      'hooks:\n  enabled: true\n  gmail:\n    topic: my-watch\n',
      [],
      'my-watch',
    ],
    ['--topic', 'hooks:\n  enabled: true\n', ['--topic', 'gmail-watch'], 'gmail-watch'],
  ])('%s', async (_case, text, extra, name) => {
    const config = configIn(temp(), `${text}runtime: { dataDir: ./data }\n`);
    const result = await runHookgate([...base(config), ...['--project', 'my-project-1'], ...extra]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const gmail = parse(readFileSync(config, 'utf8')).hooks.gmail;
    expect(gmail.topic).toBe(`projects/my-project-1/topics/${name}`);
    expect(result.stdout).toContain(`gcloud pubsub topics create ${name} --project=my-project-1`);
    // The mail flow's own check no longer finds the short name.
    const check = await runHookgate(['check', '--config', config]);
    expect(check.stderr).not.toContain('hooks.gmail.topic');
  });

  it('a full topic name in the file is kept as it is', async () => {
    const text =
      'hooks:\n  enabled: true\n  gmail:\n    topic: projects/my-project-1/topics/t-1\nruntime: { dataDir: ./data }\n';
    const config = configIn(temp(), text);
    const result = await runHookgate([...base(config), '--project', 'my-project-1']);
    expect(result.code).toBe(0);
    expect(parse(readFileSync(config, 'utf8')).hooks.gmail.topic).toBe(
      'projects/my-project-1/topics/t-1',
    );
  });

  it('a topic written as a ${VAR} reference is left as it is', async () => {
    const text =
      'hooks:\n  enabled: true\n  gmail: { topic: ${GMAIL_TOPIC} }\nruntime: { dataDir: ./data }\n';
    const config = configIn(temp(), text);
    const env = { GMAIL_TOPIC: 'projects/my-project-1/topics/t-2' };
    const result = await runHookgate([...base(config), '--project', 'my-project-1'], { env });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain('topic: ${GMAIL_TOPIC}');
  });

  it('without --project the topic is left as given (the commands show a placeholder)', async () => {
    const config = configIn(temp(), 'hooks:\n  enabled: true\nruntime: { dataDir: ./data }\n');
    const result = await runHookgate([...base(config), '--topic', 'gmail-watch']);
    expect(result.code).toBe(0);
    expect(parse(readFileSync(config, 'utf8')).hooks.gmail.topic).toBe('gmail-watch');
  });
});

describe('gmail setup refuses a malformed --project before writing', () => {
  it.each([
    ['no project id', ['--project', 'p1']],
    [
      'a project number that is not digits',
      ['--project', 'my-project-1', '--project-number', 'x1'],
    ],
  ])('%s: exit 2, the file unchanged', async (_case, extra) => {
    const text = '# mine\nhooks:\n  enabled: true\nruntime: { dataDir: ./data }\n';
    const config = configIn(temp(), text);
    const result = await runHookgate([...base(config), ...extra]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/hookgate: config error: --project(-number)?: /);
    expect(result.stdout).not.toContain('Wrote hooks.gmail');
    expect(readFileSync(config, 'utf8')).toBe(text);
  });
});
