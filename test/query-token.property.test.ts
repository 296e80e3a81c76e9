/**
 * The query's credential check reads the whole query in a few native passes; a query of
 * thousands of names, or of names percent-encoded three times, cost a millisecond or more
 * read name by name, before the request was authenticated. Property: the whole-query reading
 * decides exactly as the name-by-name reading does (split at `&` and `;`, each name cut at its
 * `=` and read as paramName reads it), on queries built from the pieces that matter.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { paramName } from '../engine/ingress/query-names.ts';
import { queryCarriesToken } from '../engine/ingress/query-token.ts';

const TOKEN_NAMES = new Set([
  'token',
  'access_token',
  'auth_token',
  'hook_token',
  'x_hookgate_token',
]);

function byName(query: string): boolean {
  return query
    .split(/[&;]/)
    .some((pair) =>
      TOKEN_NAMES.has(paramName(pair.includes('=') ? pair.slice(0, pair.indexOf('=')) : pair)),
    );
}

const enc = (text: string) =>
  text.replace(/[\s\S]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

// Words, separators in every spelling, escapes of escapes, cuts, blanks, case and a sign that
// lowers to `k`.
const PIECES = [
  'token',
  'TOKEN',
  'ToKeN',
  'access',
  'auth',
  'hook',
  'x',
  'hookgate',
  'to\u212aen',
  'tok',
  'en',
  'a',
  '_',
  '-',
  '.',
  ' ',
  '+',
  '\t',
  '\u00a0',
  '\u2028',
  '&',
  ';',
  '=',
  '[',
  ']',
  '\0',
  '%',
  '%25',
  '%2525',
  '%u0074',
  '%U0074',
  '%26',
  '%3b',
  '%3D',
  '%253d',
  '%5b',
  '%00',
  '%20',
  '%2b',
  '%2',
  '%g1',
  '%74',
  '%6F',
  '%6b',
  '%4B',
  '%5f',
  '%2d',
  '%2e',
  enc('token'),
  enc(enc('token')),
  enc(enc(enc('token'))),
  enc(enc(enc(enc('token')))),
  enc('&'),
  enc(enc('=')),
  enc(' '),
  enc('['),
  enc('\0'),
];

describe('a token parameter in the query, read whole', () => {
  test.prop([fc.array(fc.constantFrom(...PIECES), { maxLength: 14 }).map((p) => p.join(''))], {
    numRuns: 5_000,
  })('decides as the name-by-name reading does', (query) => {
    expect(queryCarriesToken(query)).toBe(byName(query));
  });

  it.each([
    ['token=x', true],
    ['a=1&%2574%256f%256b%2565%256e=x', true],
    ['a=1;Access-Token[]=x', true],
    ['a=%26token=x', false],
    ['a%26token=x', false],
    ['a=1&x=token', false],
    [' hook.token \0junk=1', true],
    ['%u0074oken=1', false],
    ['to%00ken=1', false],
  ])('"%s" carries a token: %s', (query, expected) => {
    expect(queryCarriesToken(query)).toBe(expected);
    expect(byName(query)).toBe(expected);
  });
});
