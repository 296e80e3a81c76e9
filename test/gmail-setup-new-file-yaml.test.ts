/**
 * `gmail setup` with no config file yet writes `hookgate.yaml` as YAML in block style, as the
 * README's blocks and an edited file are: it wrote the whole file as JSON (`{ "hooks": { ...`),
 * since the empty file was read as a flow mapping that every key added then followed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runHookgate, tempDir } from './helpers/process.ts';

const temp = tempDir();
afterAll(() => temp.cleanup());

describe('gmail setup without a config file', () => {
  it('writes a new hookgate.yaml in YAML block style', async () => {
    const result = await runHookgate(
      [
        'gmail',
        'setup',
        '--account',
        'me@example.com',
        '--project',
        'my-project',
        '--topic',
        'gmail-watch',
        '--client-id',
        'client-1.apps.googleusercontent.com',
        '--no-consent',
      ],
      { cwd: temp.dir },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const text = readFileSync(path.join(temp.dir, 'hookgate.yaml'), 'utf8');
    expect(text).not.toContain('{');
    expect(text).toMatch(/^hooks:\n {2}token: \S+\n {2}enabled: true\n/);
    expect(text).toContain('\n  gmail:\n    account: me@example.com\n');
    const config = parse(text);
    expect(config.hooks.gmail.topic).toBe('projects/my-project/topics/gmail-watch');
  });
});
