/**
 * `gmail setup --client-secret-env NEW` over a file whose secret is already a reference to
 * another variable: the new reference is written (no value changes hands). It was reported as
 * a conflict, with the advice to set the old variable to the new value.
 */
import { describe, expect, it } from 'vitest';
import { writeGmailSetup } from '../engine/gmail/setup-config.ts';

const FILE = [
  'hooks:',
  '  enabled: true',
  '  token: t',
  '  presets: [gmail]',
  '  gmail:',
  '    account: me@example.com',
  '    pushToken: p',
  '    oauth:',
  '      clientId: ID',
  '      clientSecret: ${OLD_CLIENT_SECRET}',
  '',
].join('\n');

describe('gmail setup --client-secret-env over an existing reference', () => {
  it('moves the reference to the variable asked for, without a conflict', () => {
    const result = writeGmailSetup(FILE, {
      account: 'me@example.com',
      oauth: { clientSecretEnv: 'NEW_CLIENT_SECRET' },
      env: { OLD_CLIENT_SECRET: 'same', NEW_CLIENT_SECRET: 'same' },
    });
    expect(result.conflicts).toEqual([]);
    expect(result.text).toContain('clientSecret: ${NEW_CLIENT_SECRET}');
  });
});
