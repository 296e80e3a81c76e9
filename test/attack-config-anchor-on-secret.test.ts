/**
 * Attack: a secret that starts with `&` or `!`, written unquoted. YAML reads
 * `token: &abc rest-of-secret` as an anchor named "abc" on the value "rest-of-secret", and
 * `token: !!str rest` as a tag on "rest": the config loaded, and the credential was silently
 * the secret's tail (shorter, and partly in a name nothing shows). The README said to quote
 * such values; nothing caught the mistake. Now a tag on a secret's value, or an anchor no alias
 * uses, is a config error by setting and place (an anchored secret an alias uses is one reused on
 * purpose, and loads), and so is an anchor no alias uses in any setting; the
 * error quotes neither the value nor the anchor's name (each a piece of the secret), in
 * `check`, `serve` and a reload alike.
 */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile } from '../engine/config.ts';
import { readConfigOffThread } from '../engine/reload/read-config.ts';
import { killAll, runHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

// Two pieces of one secret as an operator would paste it: the anchor's or tag's name, the rest.
const HEAD = 'Zq81hd';
const TAIL = 'Kp93-secret-tail-0123456789abcdef';
const HIDDEN = [HEAD, TAIL];

const BASE = `server: { host: 127.0.0.1, port: 0 }
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`;

/** The loader's answer to a config file of `text`: the error message, or 'loaded'. */
function load(text: string): string {
  const { dir, cleanup } = tempDir('hookgate-anchor-secret-');
  try {
    const file = writeConfig(dir, text);
    loadConfigFile(file, {});
    return 'loaded';
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message.replace(path.join(dir, 'hookgate.yaml'), 'FILE');
  } finally {
    cleanup();
  }
}

const anchorOn = (setting: string) =>
  `cannot parse FILE: the value of ${setting} starts with an anchor (&) that no alias uses: `;
const tagOn = (setting: string) =>
  `cannot parse FILE: the value of ${setting} starts with a tag (!): `;
const UNUSED = 'cannot parse FILE: an anchor (a value starting with &) is used by no alias (*): ';

describe('an anchor or a tag on a secret, written unquoted', () => {
  it.each([
    [
      'the hook token, anchor',
      `${BASE}hooks:\n  enabled: true\n  token: &${HEAD} ${TAIL}\n`,
      anchorOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the hook token, anchor and nothing after it',
      `${BASE}hooks:\n  enabled: true\n  token: &${HEAD}${TAIL}\n`,
      anchorOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the hook token, anchor on a value on the next line',
      `${BASE}hooks:\n  enabled: true\n  token: &${HEAD}\n    ${TAIL}\n`,
      anchorOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the hook token, the yaml string tag',
      `${BASE}hooks:\n  enabled: true\n  token: !!str ${TAIL}\n`,
      tagOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the hook token, the non-specific tag',
      `${BASE}hooks:\n  enabled: true\n  token: ! ${TAIL}\n`,
      tagOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the hook token, a tag on a ${VAR} reference',
      `${BASE}hooks:\n  enabled: true\n  token: !!str \${${HEAD}}\n`,
      tagOn('hooks.token'),
      'line 5, column 3',
    ],
    [
      'the gateway token',
      `${BASE}gateway:\n  token: &${HEAD} ${TAIL}\n`,
      anchorOn('gateway.token'),
      'line 4, column 3',
    ],
    [
      'the admin token',
      `${BASE}admin:\n  port: 0\n  token: &${HEAD} ${TAIL}\n`,
      anchorOn('admin.token'),
      'line 5, column 3',
    ],
    [
      "a signed preset's secret",
      `${BASE}hooks:\n  github:\n    auth: { secret: &${HEAD} ${TAIL} }\n`,
      anchorOn('hooks.github.auth.secret'),
      'line 5, column 13',
    ],
    [
      "a mapping's second rotating secret",
      `${BASE}hooks:\n  mappings:\n    - id: m\n      auth:\n        secrets:\n          - first-secret-0123456789\n          - &${HEAD} ${TAIL}\n`,
      anchorOn('hooks.mappings.0.auth.secrets.1'),
      'line 9, column 21',
    ],
    [
      "a mapping's verify token",
      `${BASE}hooks:\n  mappings:\n    - id: m\n      auth: { scheme: hmac, verifyToken: !!str ${TAIL} }\n`,
      tagOn('hooks.mappings.0.auth.verifyToken'),
      'line 6, column 29',
    ],
    [
      'the mail push token',
      `${BASE}hooks:\n  gmail:\n    pushToken: &${HEAD} ${TAIL}\n`,
      anchorOn('hooks.gmail.pushToken'),
      'line 5, column 5',
    ],
    [
      "a runner's header value",
      `${BASE}agents:\n  list:\n    - id: a\n      runner:\n        kind: http\n        url: http://127.0.0.1:1/run\n        headers: { X-Api-Key: &${HEAD} ${TAIL} }\n`,
      anchorOn('agents.list.0.runner.headers.X-Api-Key'),
      'line 9, column 20',
    ],
    [
      'a message template (an anchor no alias uses)',
      `${BASE}hooks:\n  mappings:\n    - id: m\n      messageTemplate: &${HEAD} ${TAIL}\n`,
      UNUSED,
      'line 6, column 7',
    ],
  ])('%s: refused by setting and place, nothing of the secret told', (_name, text, said, place) => {
    const message = load(text);
    expect(message.startsWith(said), message).toBe(true);
    expect(message.endsWith(` at ${place}`), message).toBe(true);
    for (const hidden of HIDDEN) expect(message).not.toContain(hidden);
  });

  it.each([
    [
      'a quoted secret that starts with & or !',
      `${BASE}hooks:\n  enabled: true\n  token: "&${HEAD} ${TAIL}"\ngateway:\n  token: '!${HEAD}-${TAIL}'\n`,
    ],
    [
      'a secret anchored and aliased: one signing secret for two routes, on purpose',
      `${BASE}hooks:\n  github:\n    auth: { secret: &shared "${HEAD}-${TAIL}" }\n  mappings:\n    - id: m\n      match: { path: m }\n      messageTemplate: x\n      auth:\n        scheme: github\n        secret: *shared\n`,
    ],
    [
      'an anchored session key an alias uses',
      `${BASE}hooks:\n  mappings:\n    - { id: a, match: { path: a }, messageTemplate: x, sessionKey: &key "hook:shared" }\n    - { id: b, match: { path: b }, messageTemplate: x, sessionKey: *key }\n`,
    ],
    [
      'the heartbeat reply marker, anchored and aliased (not a secret)',
      `server: { host: 127.0.0.1, port: 0 }\nruntime:\n  dataDir: ./data\n  heartbeat: { every: "off", ackToken: &ack DONE }\nhooks:\n  mappings:\n    - { id: a, match: { path: a }, messageTemplate: *ack }\n`,
    ],
  ])('%s: loaded', (_name, text) => {
    expect(load(text)).toBe('loaded');
  });

  it('a quoted secret that starts with & is the whole secret', () => {
    const { dir, cleanup } = tempDir('hookgate-anchor-secret-');
    try {
      const file = writeConfig(
        dir,
        `${BASE}hooks:\n  enabled: true\n  token: "&${HEAD} ${TAIL}"\n`,
      );
      expect(loadConfigFile(file, {}).config.hooks.token).toBe(`&${HEAD} ${TAIL}`);
    } finally {
      cleanup();
    }
  });
});

describe('check, serve and a reload refuse it alike', () => {
  const TEXT = `${BASE}hooks:\n  enabled: true\n  token: &${HEAD} ${TAIL}\n`;

  it.each([
    ['check', (file: string) => ['check', '--config', file]],
    ['serve', (file: string) => ['--config', file]],
  ])(
    '%s exits 2 naming the setting and place, and prints nothing of the secret',
    async (_name, args) => {
      const { dir, cleanup } = tempDir('hookgate-anchor-secret-');
      try {
        const file = writeConfig(dir, TEXT);
        const result = await runHookgate(args(file), { cwd: dir });
        expect(result.code).toBe(2);
        expect(result.stderr).toContain(
          `cannot parse ${file}: the value of hooks.token starts with an anchor (&)`,
        );
        expect(result.stderr).toContain('at line 5, column 3');
        for (const hidden of HIDDEN)
          expect(`${result.stdout}\n${result.stderr}`).not.toContain(hidden);
      } finally {
        cleanup();
      }
    },
    60_000,
  );

  it('a reload (parsed in a worker) is refused the same way', async () => {
    const { dir, cleanup } = tempDir('hookgate-anchor-secret-');
    try {
      const file = writeConfig(dir, TEXT);
      const error = await readConfigOffThread(file).then(
        () => 'read',
        (err: Error) => err.message,
      );
      expect(error).toContain(
        `cannot parse ${file}: the value of hooks.token starts with an anchor (&)`,
      );
      for (const hidden of HIDDEN) expect(error).not.toContain(hidden);
    } finally {
      cleanup();
    }
  }, 30_000);
});
