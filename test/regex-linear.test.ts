/**
 * Every regular expression written in the engine's code is checked with
 * recheck, a ReDoS checker: a pattern that backtracks super-linearly on some
 * input (a line-start `^\s*` with the `m` flag over a run of blank lines, an
 * end-anchored `x+$` over a long run of x) held the event loop for seconds on
 * one request's text. The only patterns let through are over text the
 * operator writes (the config file), never over request bytes, payloads,
 * runner or provider answers; each says why.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { parse } from 'acorn';
import { checkSync } from 'recheck';
import { afterAll, describe, expect, it } from 'vitest';
import { BUILT_PATTERNS } from '../engine/safety/injection.ts';
import { MARKER_PATTERNS } from '../engine/safety/markers.ts';

const ENGINE = path.join(import.meta.dirname, '..', 'engine');
// The marker patterns take recheck's automaton check 20 s on a loaded 2-core machine; a check
// that runs out of time answers 'unknown', which fails the test, so the bound is generous.
const CHECK_TIMEOUT_MS = 180_000;

/** Patterns recheck flags that only ever see the operator's own configuration. */
const CONFIG_ONLY: ReadonlyArray<readonly [file: string, pattern: string, why: string]> = [
  ['audit.ts', '=+$', "the configured token's padding, when the config is audited"],
  [
    'auth/signed-content.ts',
    '\\{\\{\\s*([^{}]*?)\\s*\\}\\}',
    "a signed route's configured content template",
  ],
  ['config-rules.ts', '\\/+$', "a configured path's trailing slashes"],
  [
    'config.ts',
    '\\$\\$\\{|\\$\\{([^}]*)\\}|hookgate\\.env\\.([A-Za-z_][A-Za-z0-9_]*)\\.placeholder',
    "the config file's ${VAR} references",
  ],
  ...[
    'delivery/adapters/discord.ts',
    'delivery/adapters/imessage.ts',
    'delivery/adapters/mattermost.ts',
    'delivery/adapters/msteams.ts',
    'delivery/adapters/signal.ts',
    'delivery/adapters/slack.ts',
    'delivery/adapters/telegram.ts',
    'delivery/adapters/whatsapp.ts',
    'gmail/api.ts',
    'runtime/runners/openai.ts',
  ].map((file) => [file, '\\/+$', "a configured base URL's trailing slashes"] as const),
];

/**
 * Digests of the patterns recheck has found linear (flags and source): a pattern found there is
 * not checked again, so the check costs its minute of CPU only for a pattern that is new or
 * changed. `REGEX_VERDICTS=write npx vitest run test/regex-linear.test.ts` adds the ones checked.
 */
const VERDICTS = path.join(import.meta.dirname, 'regex-linear.safe.json');
const known = new Set<string>(JSON.parse(readFileSync(VERDICTS, 'utf8')) as string[]);
const learned = new Set<string>();

afterAll(() => {
  if (process.env['REGEX_VERDICTS'] !== 'write' || learned.size === 0) return;
  const all = [...new Set([...known, ...learned])].sort();
  writeFileSync(VERDICTS, `${JSON.stringify(all, null, 1)}\n`);
});

/** Whether recheck finds the pattern linear (or found it so before). */
function linear(pattern: string, flags: string): boolean {
  const key = createHash('sha256').update(`${flags}/${pattern}`).digest('hex').slice(0, 32);
  if (known.has(key)) return true;
  const safe = checkSync(pattern, flags, { timeout: CHECK_TIMEOUT_MS }).status === 'safe';
  if (safe) learned.add(key);
  return safe;
}

type Found = { file: string; line: number; pattern: string; flags: string };

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Every regular expression literal in the engine's TypeScript. */
function literals(): Found[] {
  const found: Found[] = [];
  for (const file of sources(ENGINE)) {
    const js = stripTypeScriptTypes(readFileSync(file, 'utf8'), { mode: 'strip' });
    parse(js, {
      ecmaVersion: 'latest',
      sourceType: 'module',
      locations: true,
      onToken(token) {
        if (token.type.label !== 'regexp') return;
        const { pattern, flags } = (
          token as unknown as { value: { pattern: string; flags: string } }
        ).value;
        const line = token.loc?.start.line ?? 0;
        found.push({ file: path.relative(ENGINE, file), line, pattern, flags });
      },
    });
  }
  return found;
}

describe('regular expressions in the engine', () => {
  it('every one runs in linear time on any input, but those over the operator config', () => {
    const all = literals();
    // The scan found the engine's patterns (a broken scan would pass with none).
    expect(all.length).toBeGreaterThan(150);
    const flagged = all
      .filter(({ pattern, flags }) => !linear(pattern, flags))
      .filter(({ file, pattern }) => !CONFIG_ONLY.some(([f, p]) => f === file && p === pattern))
      .map(({ file, line, pattern, flags }) => `${file}:${line} /${pattern}/${flags}`);
    expect(flagged).toEqual([]);
  }, 900_000);

  it('so does every one the safety wrapper builds at load (look-alikes widened, phrases joined)', () => {
    const built = [...BUILT_PATTERNS, ...MARKER_PATTERNS];
    // The injection detector's phrases and the marker patterns were all found.
    expect(BUILT_PATTERNS.length).toBeGreaterThan(10);
    const flagged = built
      .filter(({ source, flags }) => !linear(source, flags))
      .map(({ source, flags }) => `/${source.slice(0, 120)}/${flags}`);
    expect(flagged).toEqual([]);
  }, 900_000);
});
