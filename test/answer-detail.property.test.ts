/**
 * The one path by which an outside answer's text enters a reason
 * (engine/outbound/answer-detail.ts): whatever surrounds it, a credential
 * echoed as sent or in the escapings an answer may wrap it in (URL-, path-,
 * form- or JSON-encoded, PHP's escaped slashes, `\u` escapes, lowercase or
 * doubled percent-escapes, HTML references, upper-cased, broken by a
 * newline) is blanked, and an answer without one comes back as it was; the
 * text kept is bounded; a code-shaped field passes only with its shape.
 */
import { fc, test } from '@fast-check/vitest';
import { encodeHTML } from 'entities';
import { describe, expect, it } from 'vitest';
import {
  ANSWER_DETAIL_MAX,
  ANSWER_WINDOW,
  answerCode,
  answerDetail,
  answerEnd,
  blankSecrets,
  headerSecrets,
  urlSecrets,
} from '../engine/outbound/answer-detail.ts';

// Credentials of printable characters, spaces and the ones encodings change; never '*', the
// blank's own character (a "secret" of stars would be found in the blank itself).
const credential = fc
  .string({
    unit: fc.constantFrom(...'aZ09 &=/+%?#"\\é𝄞~-_.:'.split('')),
    minLength: 4,
    maxLength: 40,
  })
  .filter((s) => s.trim().length >= 4);
const around = fc.string({ unit: fc.constantFrom(...'xY1 \n\t:{}"'.split('')), maxLength: 300 });

const SPELLINGS: Array<[string, (s: string) => string]> = [
  ['as sent', (s) => s],
  // URLs carry a lone surrogate as U+FFFD.
  ['URL-encoded', (s) => encodeURIComponent(s.toWellFormed())],
  ['form-encoded', (s) => new URLSearchParams({ s }).toString().slice(2)],
  ['JSON-escaped', (s) => JSON.stringify(s).slice(1, -1)],
  ['in a URL path', inPath],
  ['with its blanks doubled', (s) => s.replace(/ /g, '  \n')],
  ['JSON with escaped slashes (PHP)', (s) => JSON.stringify(s).slice(1, -1).replaceAll('/', '\\/')],
  [
    'JSON \\u escapes',
    (s) =>
      s
        .split('')
        .map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
        .join(''),
  ],
  [
    'percent-encoded, lowercase hex',
    (s) => encodeURIComponent(s.toWellFormed()).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
  ],
  ['percent-encoded twice', (s) => encodeURIComponent(encodeURIComponent(s.toWellFormed()))],
  [
    'as HTML numeric entities',
    (s) => [...s].map((c) => `&#x${c.codePointAt(0)?.toString(16)};`).join(''),
  ],
  ['as HTML named entities', (s) => encodeHTML(s)],
  ['broken by a newline', (s) => `${s.slice(0, 2)}\n${s.slice(2)}`],
  ['upper-cased', (s) => s.toUpperCase()],
  ['with invisible characters inside', (s) => [...s].join('\u200b')],
  // Invisible above U+FFFF (two UTF-16 units each): a tag space, a variation selector.
  ['with tag characters inside', (s) => [...s].join('\u{E0020}')],
  ['with supplementary variation selectors inside', (s) => [...s].join('\u{E0101}')],
];

/** The secret as a URL parser puts it in a path (`/bot<token>/sendMessage`), where it stays one. */
function inPath(secret: string): string {
  const segments = `bot${secret}`.split('/');
  // `?`, `#`, `\\` and dot segments change the URL's shape: such a token could not be in a path.
  if (/[?#\\]/.test(secret) || segments.some((part) => part === '.' || part === '..'))
    return secret;
  return new URL(`http://h/bot${secret.toWellFormed()}/send`).pathname.slice(4, -5);
}

describe('answer detail', () => {
  test.prop([credential, around, around, fc.constantFrom(...SPELLINGS)])(
    'a credential echoed in any spelling, anywhere in an answer, is blanked in the reason',
    (secret, before, after, [, spell]) => {
      const spelled = spell(secret.trim());
      const said = answerDetail(`${before}${spelled}${after}`, [secret], 10_000);
      expect(said).not.toContain(secret.trim().replace(/\s+/g, ' '));
      expect(said).not.toContain(spelled.trim().replace(/\s+/g, ' '));
      expect(said).toContain('***');
    },
  );

  test.prop([fc.string({ maxLength: 5000 }), fc.array(credential, { maxLength: 4 })])(
    'the detail kept is bounded whatever the answer',
    (text, secrets) => {
      expect(answerDetail(text, secrets).length).toBeLessThanOrEqual(ANSWER_DETAIL_MAX + 1);
    },
  );

  // A secret of letters a-m between fillers of N-Z: any a-m left in the output is a piece of it.
  const letters = (from: string, to: string, min: number) =>
    fc.string({
      unit: fc
        .integer({ min: from.charCodeAt(0), max: to.charCodeAt(0) })
        .map((c) => String.fromCharCode(c)),
      minLength: min,
      maxLength: 24,
    });

  test.prop([letters('a', 'm', 4), letters('N', 'Z', 1), fc.nat()])(
    'an answer cut at its start (a stream of which the end is kept): no piece of a secret at the cut',
    (secret, filler, at) => {
      const stream = `${secret}${filler}`.repeat(40);
      const kept = stream.slice(at % stream.length);
      expect(answerEnd(kept, [secret], true)).not.toMatch(/[a-m]/);
    },
  );

  // Fewer runs: each builds and reads an answer of 100 K characters.
  test.prop([letters('a', 'm', 4), letters('N', 'Z', 1)], { numRuns: 25 })(
    'an answer longer than the window, read from either end: no piece of a secret at the cut',
    (secret, filler) => {
      const long = `${filler}${secret}`.repeat(
        Math.ceil((ANSWER_WINDOW * 1.5) / (filler.length + secret.length)),
      );
      expect(answerDetail(long, [secret], ANSWER_WINDOW)).not.toMatch(/[a-m]/);
      expect(answerEnd(long, [secret])).not.toMatch(/[a-m]/);
    },
  );

  it('a secret that contains another is blanked whole', () => {
    expect(
      blankSecrets('got Bearer sk-123456 and sk-123456', ['Bearer sk-123456', 'sk-123456']),
    ).toBe('got *** and ***');
  });

  it.each([
    ['api.context.invalid_param.app_error', /^[a-z][a-z0-9_.]{0,127}$/, true],
    ['api.context Bearer tok', /^[a-z][a-z0-9_.]{0,127}$/, false],
    [`a${'b'.repeat(200)}`, /^[a-z][a-z0-9_.]{0,127}$/, false],
    [42, /^[0-9]+$/, false],
  ])('a code %j passes its shape %s: %s', (value, shape, passes) => {
    expect(answerCode(value, shape)).toBe(passes ? value : undefined);
  });

  it('a URL gives its user info, token-like path segments and long query values; headers their credentials, and other values when long', () => {
    expect(
      urlSecrets('https://relay:p%40ss@h.example/agent/Zx9kQ2mP7vL4/run?key=abcdefgh12&v=2'),
    ).toEqual(['relay', 'relay', 'p%40ss', 'p@ss', 'Zx9kQ2mP7vL4', 'abcdefgh12']);
    // Words in a path stay readable in a reason; a long run or letters mixed with digits do not.
    expect(urlSecrets('https://api.example/v1/chat/completions')).toEqual([]);
    expect(
      urlSecrets(
        'https://hooks.example/services/T0001/B0002/abcdefghijklmnopqrstuvwxyz/bot123456:AAHdqTcvC',
      ),
    ).toEqual(['abcdefghijklmnopqrstuvwxyz', 'bot123456:AAHdqTcvC']);
    const basic = Buffer.from('user:hunter22').toString('base64');
    expect(
      headerSecrets({
        authorization: `Basic ${basic}`,
        'x-key': 'k1',
        'x-region': 'eu',
        'x-tenant': 'acme-corp-eu-1',
        'x-forwarded': 'Bearer t0k',
        cookie: 'sid=abcdefghijk; theme=dark',
      }),
    ).toEqual([
      `Basic ${basic}`,
      basic,
      'user:hunter22',
      'hunter22',
      'k1',
      'acme-corp-eu-1',
      'Bearer t0k',
      't0k',
      'sid=abcdefghijk; theme=dark',
      'abcdefghijk',
    ]);
  });

  // Fillers of N-Z, digits, blanks and the characters escapes start with; the secret of a-m.
  test.prop([
    fc.string({ unit: fc.constantFrom(...'NOPZ019 \n%&;#\\/+'.split('')), maxLength: 300 }),
    letters('a', 'm', 4),
  ])('an answer that holds no secret comes back as it was', (text, secret) => {
    expect(answerEnd(text, [secret])).toBe(text);
    expect(answerDetail(text, [secret], 10_000)).toBe(text.replace(/\s+/g, ' ').trim());
  });
});
