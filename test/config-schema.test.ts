/**
 * The published config schema: schemas/hookgate.schema.json is what
 * `hookgate schema` prints; ajv compiles it strictly; every example config
 * validates against it as an editor sees the file (no defaults, `${VAR}` not
 * yet substituted); and what the loader refuses by type, the schema refuses too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ROOT, runHookgate } from './helpers/process.ts';

const COMMITTED = path.join(ROOT, 'schemas/hookgate.schema.json');
const EXAMPLES = path.join(ROOT, 'examples');
const committed = JSON.parse(readFileSync(COMMITTED, 'utf8')) as Record<string, unknown>;
const validate = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true }).compile(
  committed,
);

const examples = readdirSync(EXAMPLES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => path.join(EXAMPLES, entry.name, 'hookgate.yaml'));

describe('published config schema', () => {
  it('schemas/hookgate.schema.json is what hookgate schema prints', async () => {
    const result = await runHookgate(['schema']);
    expect(result.code).toBe(0);
    // Compared as JSON, so a formatter run over the file does not matter.
    expect(
      JSON.parse(result.stdout),
      'schemas/hookgate.schema.json is stale: regenerate it with `npx hookgate schema > schemas/hookgate.schema.json`',
    ).toEqual(committed);
  });

  it('names itself: draft-07, an id and a title', () => {
    expect(committed).toMatchObject({
      $schema: 'http://json-schema.org/draft-07/schema#',
      $id: 'hookgate:config',
      title: 'hookgate configuration',
    });
  });

  it('finds the examples', () => {
    expect(examples.length).toBeGreaterThanOrEqual(5);
  });

  it.each(examples.map((file) => [path.relative(ROOT, file), file]))(
    '%s validates and points its editor at the schema',
    (_name, file) => {
      const text = readFileSync(file, 'utf8');
      expect(text.split('\n')[0]).toBe(
        '# yaml-language-server: $schema=../../schemas/hookgate.schema.json',
      );
      const valid = validate(parseYaml(text));
      expect(validate.errors ?? []).toEqual([]);
      expect(valid).toBe(true);
    },
  );

  it.each([
    [
      'a reference where a pattern-checked string goes',
      { providers: { a: { baseUrl: '${URL}' } } },
      true,
    ],
    ['a reference in a secret', { hooks: { token: '${HOOKS_TOKEN}' } }, true],
    ['a partial server block (defaults fill the rest)', { server: { host: '0.0.0.0' } }, true],
    ['a number as a string', { server: { port: '8787' } }, false],
    ['an unknown setting', { hooks: { tokn: 'x' } }, false],
    ['a URL that is no URL', { providers: { a: { baseUrl: 'ftp://x' } } }, false],
  ])('%s: valid=%s', (_name, doc, valid) => {
    expect(validate(doc)).toBe(valid);
  });
});
