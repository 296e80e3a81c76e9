/**
 * A config file's parse errors are reported by their first line only (the rest quotes the
 * file, and a line may hold a literal secret). A YAML tag the parser does not know (`!secret`,
 * `!vault`, `!ENV`, idioms of other tools) was not an error but a warning, which the yaml
 * library handed to process.emitWarning with the offending line quoted in full: `serve`
 * printed the hook token of that line on its stderr (the journal, the container log), the tag
 * was dropped and the config ran (`token: !ENV NAME` with the literal text as the token), and
 * `check` said it was OK. Now such a tag is a config error like any other. Its reason is
 * told in hookgate's words, never the library's, which quote the text at fault: a secret that
 * itself starts with `!`, `*` or `|` (as generated passwords do) is the tag, alias or block
 * header the library named, and was printed by `check`, `serve`, a failed reload's log line,
 * `/readyz` and `hookgate reload`.
 */
import { afterAll, expect, it } from 'vitest';
import { killAll, runHookgate, tempDir, writeConfig } from './helpers/process.ts';

afterAll(killAll);

const SECRET = 'hook-token-Zq81-very-secret-0123456789';

it('a config line with a tag the parser does not know is refused, and never printed', async () => {
  const { dir, cleanup } = tempDir('hookgate-tag-warning-');
  try {
    const file = writeConfig(
      dir,
      `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: !secret ${SECRET}
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
    );
    for (const args of [
      ['check', '--config', file],
      ['--config', file],
    ]) {
      const result = await runHookgate(args, { cwd: dir });
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr, args[0]).toContain(
        `cannot parse ${file}: a YAML tag (a value starting with !) is not one the loader reads; quote a value that starts with ! at line 4, column 10`,
      );
      expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain(SECRET);
    }
  } finally {
    cleanup();
  }
}, 60_000);

// Each would be the first thing the library quotes: the tag, the alias's anchor name, the
// block scalar header.
const STARTS = ['!', '*', '|', '&', '>', '%', '@'];

it.each(STARTS)(
  'a literal secret starting with %s is refused without being printed',
  async (start) => {
    const secret = `${start}Zq81-secret-hook-token-0123456789`;
    const { dir, cleanup } = tempDir('hookgate-tag-secret-');
    try {
      const file = writeConfig(
        dir,
        `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: ${secret}
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`,
      );
      for (const args of [
        ['check', '--config', file],
        ['--config', file],
      ]) {
        const result = await runHookgate(args, { cwd: dir });
        expect(result.code, args[0]).toBe(2);
        // An anchor (`&`) on the token is refused as such (it left the token empty).
        expect(result.stderr, args[0]).toMatch(
          new RegExp(`cannot parse ${file}: .* at line 4, column \\d+`),
        );
        expect(`${result.stdout}\n${result.stderr}`, args[0]).not.toContain('Zq81-secret');
      }
    } finally {
      cleanup();
    }
  },
  60_000,
);

/** `hookgate check` on a config of `text`, with `unset` variables removed from its environment. */
async function check(text: string, unset: string[] = []) {
  const { dir, cleanup } = tempDir('hookgate-ref-secret-');
  try {
    const file = writeConfig(dir, text);
    const env = Object.fromEntries(unset.map((name) => [name, undefined]));
    return await runHookgate(['check', '--config', file], { cwd: dir, env });
  } finally {
    cleanup();
  }
}

const TOKEN_LINE = (value: string) => `server: { host: 127.0.0.1, port: 0 }
hooks:
  enabled: true
  token: "${value}"
runtime: { dataDir: ./data, heartbeat: { every: "off" } }
`;

it.each([
  [
    'a literal secret holding ${ with no valid name after it',
    TOKEN_LINE('Zq7${kQ9!x}Lm2-secret-0123456789'),
    [],
    'hooks.token: an invalid ${...} reference',
    'kQ9',
  ],
  [
    'a literal secret holding ${WORD} with no such variable',
    TOKEN_LINE('Zq7${KQ9XL}m2-secret-0123456789'),
    ['KQ9XL'],
    'hooks.token: an environment variable it refers to is not set',
    'KQ9XL',
  ],
  [
    'an unset ${WORD} inside a store URL (its password)',
    `hooks: { enabled: true, token: hook-token-0123456789abcdefgh }
store: { kind: postgres, url: "postgres://app:Zq8\${secretPart}x@db:5432/app" }
`,
    ['secretPart'],
    'store.url: an environment variable it refers to is not set',
    'secretPart',
  ],
])(
  '%s is refused without repeating its text',
  async (_name, text, unset, said, hidden) => {
    const result = await check(text, unset);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(said);
    expect(`${result.stdout}\n${result.stderr}`).not.toContain(hidden);
  },
  60_000,
);
