/**
 * Attack: a reload that hands the running admin token to the hooks (or the
 * gateway) while naming a new admin token. The admin listener keeps its
 * token until a restart, so such a file would let every webhook sender use
 * the admin API; the reload is refused and nothing changes.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { loadConfigFile, resolveConfig } from '../engine/config.ts';
import { startHookgate } from '../engine/hookgate.ts';
import { createLogger } from '../engine/log.ts';
import { tempDir } from './helpers/hookgate.ts';

const ADMIN = 'admin-token-AAAAAAAAAAAAAAAAAAAAAA';
const HOOK = 'hook-token-HHHHHHHHHHHHHHHHHHHHHHH';
const NEW_ADMIN = 'admin-token-NEWNEWNEWNEWNEWNEWNEW';

function config(tokens: { hook: string; admin: string; gateway?: string }): string {
  return [
    'server: { host: 127.0.0.1, port: 0 }',
    `hooks: { enabled: true, token: ${tokens.hook} }`,
    ...(tokens.gateway ? [`gateway: { token: ${tokens.gateway} }`] : []),
    `admin: { port: 0, token: ${tokens.admin} }`,
    'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
    '',
  ].join('\n');
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started() {
  const temp = tempDir('hookgate-reload-admin-');
  cleanups.push(temp.cleanup);
  const file = path.join(temp.dir, 'hookgate.yaml');
  writeFileSync(file, config({ hook: HOOK, admin: ADMIN }));
  const hookgate = await startHookgate(loadConfigFile(file, {}), {
    logger: createLogger('silent'),
    runtime: false,
    env: {},
  });
  cleanups.push(() => hookgate.close());
  return { file, hookgate };
}

const wake = (url: string, token: string) =>
  fetch(`${url}/hooks/wake`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{"text":"x"}',
  });

it.each([
  ['hooks.token', { hook: ADMIN, admin: NEW_ADMIN }],
  ['gateway.token', { hook: HOOK, admin: NEW_ADMIN, gateway: ADMIN }],
])(
  'a reload giving the running admin token to %s is refused, and the hook token stays',
  async (field, tokens) => {
    const { file, hookgate } = await started();
    writeFileSync(file, config(tokens));
    const outcome = await hookgate.reload('test');
    expect(outcome.ok).toBe(false);
    expect(outcome.error).toContain(`${field}: must differ from the admin token in force`);
    expect(JSON.stringify(outcome)).not.toContain(ADMIN);
    // Nothing changed: the admin token opens no hook, the old hook token still does.
    expect((await wake(hookgate.url, ADMIN)).status).toBe(401);
    expect((await wake(hookgate.url, HOOK)).status).toBe(200);
    const admin = hookgate.admin?.url;
    const info = await fetch(`${admin}/api/info`, { headers: { authorization: `Bearer ${HOOK}` } });
    expect(info.status).toBe(401);
  },
);

it('a reload that changes the hook token to a fresh one still goes through', async () => {
  const { file, hookgate } = await started();
  writeFileSync(file, config({ hook: 'hook-token-FRESHFRESHFRESHFRESHFR', admin: NEW_ADMIN }));
  const outcome = await hookgate.reload('test');
  expect(outcome.ok).toBe(true);
  expect(outcome.restartNeeded).toEqual(['admin']);
  expect((await wake(hookgate.url, 'hook-token-FRESHFRESHFRESHFRESHFR')).status).toBe(200);
});

it('a reload giving the running admin token to a route verify token (it travels in URLs) is refused', async () => {
  const { file, hookgate } = await started();
  writeFileSync(
    file,
    [
      'server: { host: 127.0.0.1, port: 0 }',
      'hooks:',
      '  enabled: true',
      `  token: ${HOOK}`,
      '  mappings:',
      '    - id: meta',
      '      match: { path: meta }',
      '      action: wake',
      '      textTemplate: meta',
      `      auth: { scheme: hmac, secret: meta-app-secret-0123456789, header: x-hub-signature-256, verifyToken: ${ADMIN} }`,
      `admin: { port: 0, token: ${NEW_ADMIN} }`,
      'runtime: { dataDir: ./data, heartbeat: { every: "off" } }',
      '',
    ].join('\n'),
  );
  const outcome = await hookgate.reload('test');
  expect(outcome.ok).toBe(false);
  expect(outcome.error).toContain(
    'hooks.mappings.0.auth.verifyToken: must differ from the admin token in force',
  );
  expect(JSON.stringify(outcome)).not.toContain(ADMIN);
});

it.each([
  ['hooks.gmail.pushToken', { gmail: { pushToken: ADMIN } }],
  ['hooks.github.auth.secret', { github: { auth: { secret: ADMIN } } }],
])('at boot, an admin token that is also %s is a config error', (path, hooks) => {
  expect(() =>
    resolveConfig(
      {
        hooks: { enabled: true, token: HOOK, ...hooks },
        admin: { port: 0, token: ADMIN },
      },
      { baseDir: '/tmp', dataDir: '/tmp/hookgate-unused', env: {} },
    ),
  ).toThrow(`must differ from ${path}`);
});
