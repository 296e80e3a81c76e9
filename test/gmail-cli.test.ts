/**
 * The mail flow's commands over the real command line: `gmail setup` writes
 * a config that boots (comments kept, the gmail preset added, a hook token
 * made, the topic's full name, the OIDC audience and push identity) and
 * prints the gcloud commands; `gmail status` before and after the service
 * ran; `gmail stop` ends the watch at Gmail.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeRefreshToken } from '../engine/gmail/token-file.ts';
import { setupArgs as gmailSetupArgs } from './helpers/gmail-binary.ts';
import { startGmailStandIn, type GmailStandIn } from './helpers/gmail-stand-in.ts';
import { runHookgate, tempDir } from './helpers/process.ts';

const temp = tempDir();
const config = path.join(temp.dir, 'hookgate.yaml');
let gmail: GmailStandIn;

beforeAll(async () => {
  gmail = await startGmailStandIn();
  writeFileSync(
    config,
    '# the operator wrote this\nhooks:\n  enabled: true\nruntime: { dataDir: ./data }\n',
  );
});
afterAll(async () => {
  await gmail.close();
  temp.cleanup();
});

const setupArgs = gmailSetupArgs(config);

describe('hookgate gmail', () => {
  it('setup writes a config that boots and prints the gcloud commands', async () => {
    const result = await runHookgate(setupArgs);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const text = readFileSync(config, 'utf8');
    expect(text).toContain('# the operator wrote this');
    expect(text).toMatch(/presets:\s*\n?\s*- gmail|presets: \[ gmail \]/);
    expect(text).toContain('topic: projects/my-project-1/topics/gmail-watch');
    expect(text).toContain('audience: https://hooks.example.com/gmail-pubsub');
    expect(result.stdout).toContain(
      'gcloud pubsub topics create gmail-watch --project=my-project-1',
    );
    expect(result.stdout).toContain(
      '--push-auth-token-audience=https://hooks.example.com/gmail-pubsub',
    );
    // Without the consent there is no refresh token: check says so (serve would start and warn).
    const before = await runHookgate(['check', '--config', config]);
    expect(before.code).toBe(2);
    expect(before.stderr).toContain('hooks.gmail.oauth.refreshToken: no refresh token');
    // The token the consent stores in the data directory is what check then finds.
    writeRefreshToken(path.join(temp.dir, 'data'), 'me@example.com', 'stored-refresh-token');
    const check = await runHookgate(['check', '--config', config]);
    expect(check.stderr).toBe('');
    expect(check.stdout).toContain('mail flow: me@example.com');
  });

  it('setup run twice changes nothing more', async () => {
    const before = readFileSync(config, 'utf8');
    expect((await runHookgate(setupArgs)).code).toBe(0);
    expect(readFileSync(config, 'utf8')).toBe(before);
  });

  it('status before the service ran says nothing is recorded (exit 1)', async () => {
    const result = await runHookgate(['gmail', 'status', '--config', config]);
    expect(result.stdout).toContain('nothing recorded yet');
    expect(result.code).toBe(1);
  });

  it('stop calls users.stop with the stored authorisation', async () => {
    const text = readFileSync(config, 'utf8')
      .replace(
        'clientId: client-1.apps.googleusercontent.com',
        [
          `clientId: ${gmail.clientId}`,
          `      clientSecret: ${gmail.clientSecret}`,
          `      refreshToken: ${gmail.refreshToken}`,
          `      tokenUrl: ${gmail.tokenUrl}`,
        ].join('\n'),
      )
      .replace('  gmail:\n', `  gmail:\n    apiBaseUrl: ${gmail.apiBaseUrl}\n`);
    writeFileSync(config, text);
    const result = await runHookgate(['gmail', 'stop', '--config', config]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(gmail.stops()).toBe(1);
  });
});
