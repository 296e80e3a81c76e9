/**
 * A reload that changes the gmail preset's own settings (`hooks.gmail.allowUnsafeExternalContent`,
 * `.model`, `.thinking`) applies them to the next mail, as it applies any mapping, and does not
 * say they wait for a restart: it said so while the next mail already ran unwrapped.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOKEN } from './helpers/hookgate.ts';
import {
  listStoredActions,
  postHook,
  runHookgate,
  startServer,
  useProcessFixtures,
} from './helpers/process.ts';

const temp = useProcessFixtures();

function config(unsafe: boolean): string {
  return `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${TOKEN}
  presets: [gmail]
  gmail: { allowUnsafeExternalContent: ${unsafe} }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`;
}

const mail = (id: string) => ({
  source: 'gmail',
  messages: [{ id, from: 'a@example.com', subject: 's', snippet: 'the snippet' }],
});

describe('reloading the gmail preset settings', () => {
  it('applies them to the next mail and does not name them as waiting for a restart', async () => {
    const dir = temp();
    const file = path.join(dir, 'hookgate.yaml');
    writeFileSync(file, config(false));
    const server = await startServer(['--config', file]);
    expect((await postHook(server.url, 'gmail', mail('m1'), { token: TOKEN })).status).toBe(200);

    writeFileSync(file, config(true));
    const reload = await runHookgate(['reload', '--config', file]);
    expect(reload.code).toBe(0);
    expect(reload.stdout).not.toContain('wait for a restart');

    expect((await postHook(server.url, 'gmail', mail('m2'), { token: TOKEN })).status).toBe(200);
    const actions = await listStoredActions(['--data-dir', path.join(dir, 'data')]);
    const byMail = (id: string) =>
      actions.find((a) => String(a['sessionKey']).endsWith(`:${id}`)) as Record<string, unknown>;
    expect(byMail('m1')['untrusted']).toBe(true);
    expect(String(byMail('m1')['prompt'])).toContain('EXTERNAL_UNTRUSTED_CONTENT');
    expect(byMail('m2')['untrusted']).toBe(false);
    expect(byMail('m2')['prompt']).toBeUndefined();
  });
});
