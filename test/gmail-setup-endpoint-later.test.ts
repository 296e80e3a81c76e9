/**
 * `hookgate gmail setup` run again with the public URL once it is known (README, Mail notifications):
 * "With `--push-endpoint` the push is set up in OIDC mode (its audience, and the push service
 * account of `--project` or `--service-account`); without it, in token mode".
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runHookgate, useProcessFixtures } from './helpers/process.ts';

const temp = useProcessFixtures();

describe('gmail setup run again', () => {
  it('a setup run with --push-endpoint on a file set up without one switches the push to OIDC', async () => {
    const dir = temp();
    const config = path.join(dir, 'hookgate.yaml');
    writeFileSync(config, 'hooks:\n  enabled: true\nruntime: { dataDir: ./data }\n');
    const base = ['gmail', 'setup', '--config', config, '--account', 'me@example.com'];
    // First run: the operator does not know the public URL yet (token mode, as documented).
    const first = await runHookgate([
      ...base,
      ...['--topic', 'gmail-watch', '--client-id', 'ID', '--no-consent'],
    ]);
    expect(first.code).toBe(0);
    // Second run: now with the push endpoint and the project, as the README's example runs it.
    const second = await runHookgate([
      ...base,
      ...['--project', 'my-project', '--project-number', '123456', '--topic', 'gmail-watch'],
      ...['--push-endpoint', 'https://hooks.example.com/gmail-pubsub', '--client-id', 'ID'],
      '--no-consent',
    ]);
    expect(second.code).toBe(0);
    const gmail = parse(readFileSync(config, 'utf8')).hooks.gmail;
    expect(gmail.push.mode).toBe('oidc');
    expect(gmail.push.audience).toBe('https://hooks.example.com/gmail-pubsub');
    expect(second.stdout).toContain(
      '--push-auth-token-audience=https://hooks.example.com/gmail-pubsub',
    );
  });

  it('--client-secret-env writes the OAuth client secret as a reference to that variable, never its value', async () => {
    const dir = temp();
    const config = path.join(dir, 'hookgate.yaml');
    writeFileSync(config, 'hooks:\n  enabled: true\nruntime: { dataDir: ./data }\n');
    const args = [
      ...['gmail', 'setup', '--config', config, '--account', 'me@example.com'],
      ...['--client-id', 'ID', '--client-secret-env', 'GMAIL_CLIENT_SECRET', '--no-consent'],
    ];
    const env = { GMAIL_CLIENT_SECRET: 'the-client-secret-value' };
    const first = await runHookgate(args, { env });
    expect(first.code).toBe(0);
    const text = readFileSync(config, 'utf8');
    expect(parse(text).hooks.gmail.oauth.clientSecret).toBe('${GMAIL_CLIENT_SECRET}');
    expect(text).not.toContain('the-client-secret-value');
    expect(first.stdout).not.toContain('plain text');
    // Run again: nothing more changes.
    expect((await runHookgate(args, { env })).code).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(text);
    // Not a variable name: refused, nothing written.
    const bad = await runHookgate([...args.slice(0, -2), '--client-secret-env', 'a secret'], {
      env,
    });
    expect(bad.code).toBe(2);
    expect(readFileSync(config, 'utf8')).toBe(text);
  });
});
