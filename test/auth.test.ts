/**
 * The token decision from raw headers: which carriers count, and when a
 * request is let in (a property over any mix of carriers).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { createTokenCheck, presentedToken } from '../engine/auth.ts';
import { queryCarriesToken } from '../engine/ingress/query-token.ts';

const TOKEN = 'right-token-0123456789';
const matches = createTokenCheck(TOKEN);

describe('token carriers', () => {
  it.each([
    ['no carrier', [], { kind: 'absent' }],
    ['Bearer', ['Authorization', `Bearer ${TOKEN}`], { kind: 'token', token: TOKEN }],
    ['Basic is not a carrier', ['authorization', 'Basic abc'], { kind: 'absent' }],
    ['bare scheme is an empty token', ['Authorization', 'Bearer'], { kind: 'token', token: '' }],
    [
      'two carriers that disagree',
      ['Authorization', 'Bearer a', 'X-Hookgate-Token', 'b'],
      { kind: 'conflict' },
    ],
  ])('%s', (_name, raw, expected) => {
    expect(presentedToken(raw)).toEqual(expected);
  });

  const carrier = fc.tuple(
    fc.constantFrom('authorization', 'Authorization', 'x-hookgate-token', 'X-HOOKGATE-TOKEN'),
    fc.constantFrom(TOKEN, 'wrong', '', ` ${TOKEN} `),
  );
  const other = fc.tuple(fc.constantFrom('content-type', 'x-other'), fc.string());

  test.prop([fc.array(fc.oneof(carrier, other), { maxLength: 6 })])(
    'a request is let in exactly when it carries the token and nothing else',
    (pairs) => {
      const raw = pairs.flatMap(([name, value]) =>
        name.toLowerCase() === 'authorization' ? [name, `Bearer ${value}`] : [name, value],
      );
      const values = pairs
        .filter(([name]) => /^(authorization|x-hookgate-token)$/i.test(name))
        .map(([, value]) => value.trim());
      const expected = values.length > 0 && values.every((value) => value === TOKEN);
      expect(matches(presentedToken(raw))).toBe(expected);
    },
  );
});

describe('token in the query', () => {
  test.prop([fc.constantFrom('token', 'access_token', 'auth_token'), fc.array(fc.boolean())])(
    'a token parameter is found in any letter case',
    (name, upper) => {
      const cased = [...name].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
      expect(queryCarriesToken(`a=1&${cased}=x`)).toBe(true);
    },
  );

  it.each(['', 'a=1', 'tokens=1', 'page_token=x', 'x=token'])('"%s" carries no token', (q) => {
    expect(queryCarriesToken(q)).toBe(false);
  });
});

describe('createTokenCheck', () => {
  it.each([
    ['the token', TOKEN, true],
    ['one character short', TOKEN.slice(0, -1), false],
    ['one character more', `${TOKEN}x`, false],
    ['its first half', TOKEN.slice(0, TOKEN.length / 2), false],
    ['the same length, last character changed', `${TOKEN.slice(0, -1)}#`, false],
    ['upper case', TOKEN.toUpperCase(), false],
  ])('%s -> %s', (_name, token, expected) => {
    expect(matches({ kind: 'token', token })).toBe(expected);
  });

  it('a token of as many characters but more bytes (Latin-1 from the header) is refused', () => {
    // node:http reads header values as Latin-1: each of these is two bytes in UTF-8, so the
    // lengths differ in bytes though not in characters, and the check must not throw.
    const latin = `${TOKEN.slice(0, -2)}éé`;
    expect(latin.length).toBe(TOKEN.length);
    expect(matches({ kind: 'token', token: latin })).toBe(false);
  });

  it.each([
    ['absent', { kind: 'absent' } as const],
    ['conflicting carriers', { kind: 'conflict' } as const],
    ['an empty token', { kind: 'token', token: '' } as const],
  ])('%s never matches', (_name, presented) => {
    expect(matches(presented)).toBe(false);
  });

  test.prop([fc.string({ maxLength: 80 })])('any other string is refused', (token) => {
    fc.pre(token !== TOKEN);
    expect(matches({ kind: 'token', token })).toBe(false);
  });
});
