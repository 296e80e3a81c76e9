/**
 * Handlebars templates: helpers, no HTML escaping, no prototype access,
 * boot-time errors, rendering that never throws; namespaced session keys.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { HookError } from '../engine/errors.ts';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import { compileSessionKeyTemplate } from '../engine/session-key-template.ts';
import { compileTemplate } from '../engine/templates.ts';

const ctx = toEvaluatorData({
  payload: { name: 'Ada <ada@example.org>', tags: ['x', 'y'], n: 5, empty: '' },
  name: 'Ada <ada@example.org>',
  list: ['a', 'b', 'c'],
  long: 'abcdefghij',
  emoji: 'ab\u{1f600}\u{1f600}',
  obj: { a: 1 },
});

describe('rendering', () => {
  it.each([
    ['plain path', '{{payload.name}}', 'Ada <ada@example.org>'],
    ['bare payload field', '{{name}}', 'Ada <ada@example.org>'],
    ['no HTML escaping', '{{name}} & "quotes"', 'Ada <ada@example.org> & "quotes"'],
    ['json', '{{json obj}}', '{"a":1}'],
    ['json of missing', '{{json nope}}', 'null'],
    ['default', '{{default payload.empty "none"}}', 'none'],
    ['default with value', '{{default payload.n "none"}}', '5'],
    ['truncate', '{{truncate long 5}}', 'abcd…'],
    ['truncate short', '{{truncate long 50}}', 'abcdefghij'],
    // A cut that would fall between an emoji's two halves leaves the emoji out whole.
    ['truncate at an emoji', '{{truncate emoji 4}}', 'ab…'],
    ['lower/upper', '{{lower "AbC"}} {{upper "AbC"}}', 'abc ABC'],
    ['join', '{{join list " | "}}', 'a | b | c'],
    ['join default separator', '{{join payload.tags}}', 'x, y'],
    ['eq in if', '{{#if (eq payload.n 5)}}five{{else}}other{{/if}}', 'five'],
    ['each', '{{#each list}}[{{this}}]{{/each}}', '[a][b][c]'],
    ['missing path', '{{payload.nope.deeper}}', ''],
    ['money', '{{money 1999 "usd"}}', '19.99 USD'],
    ['money zero-decimal', '{{money 500 "jpy"}}', '500 JPY'],
    ['money three-decimal', '{{money -5 "kwd"}}', '-0.005 KWD'],
    ['money not an amount', '{{money "12" "usd"}}', '12 usd'],
    ['money without currency', '{{money 12}}', '12'],
    ['money without an amount', '{{money payload.missing "usd"}}', ''],
    // A bare if hides 0 and false; present shows them and hides what default replaces.
    [
      'present',
      '{{#each values}}{{#if (present this)}}y{{else}}n{{/if}}{{/each}}',
      'yyyynn',
      { values: [0, false, 'x', [], null, ''] },
    ],
    ['present of missing', '{{#if (present payload.nope)}}y{{else}}n{{/if}}', 'n'],
  ])('%s', (_name, source, expected, data?: Record<string, unknown>) => {
    expect(compileTemplate(source)(data ? toEvaluatorData(data) : ctx)).toBe(expected);
  });

  it('oneLine folds every line break and run of white space into one space', () => {
    const text = { t: '  a\n b\r\n\tc\u2028d\u0085e  ', list: ['x\ny', 'z'] };
    expect(compileTemplate('{{oneLine t}}|{{oneLine list}}')(text)).toBe('a b c d e|x y, z');
  });

  it.each([
    ['constructor', '{{payload.constructor}}'],
    ['__proto__', '{{payload.__proto__}}'],
    ['prototype chain', '{{payload.name.constructor.name}}'],
    ['lookup helper', '{{lookup payload "constructor"}}'],
    ['toString', '{{obj.toString}}'],
  ])('renders paths through %s empty (prototype access attack)', (_name, source) => {
    expect(compileTemplate(source)(ctx)).toBe('');
  });

  it('renders __proto__ keys of a payload empty', () => {
    const hostile = toEvaluatorData(
      JSON.parse('{"__proto__":{"x":"leak"},"constructor":{"x":"leak"}}'),
    );
    expect(compileTemplate('{{__proto__.x}}{{constructor.x}}')(hostile)).toBe('');
  });
});

describe('compile errors at boot', () => {
  it.each([
    ['unclosed mustache', '{{payload.name'],
    ['unknown helper', '{{shout payload.name}}'],
    ['unclosed block', '{{#if x}}open'],
    ['log helper', '{{log "x"}}'],
  ])('%s', (_name, source) => {
    expect(() => compileTemplate(source)).toThrow();
  });
});

describe('properties', () => {
  const templates = [
    '{{payload.a}} {{json payload}} {{truncate payload.b 3}} {{join payload.c}} {{default payload.d "x"}}',
    '{{#each payload}}{{this}}{{/each}}{{lower payload.a}}{{upper payload}}',
    '{{#if (eq payload.a payload.b)}}y{{/if}}{{lookup payload "a"}}',
  ].map(compileTemplate);

  test.prop([fc.anything()])('rendering never throws for any payload', (payload) => {
    for (const template of templates) {
      expect(typeof template(toEvaluatorData({ payload }))).toBe('string');
      expect(typeof template({ payload })).toBe('string');
    }
  });
});

describe('session-key templates', () => {
  it('interpolates safe values inside the namespace', () => {
    const key = compileSessionKeyTemplate('hook:github:{{repo}}:{{n}}');
    expect(key.prefix).toBe('hook:github:');
    expect(key.render({ repo: 'octo.cat_1', n: 7 })).toBe('hook:github:octo.cat_1:7');
  });

  it.each([
    ['no namespace', '{{id}}'],
    ['namespace without colon', 'hook{{id}}'],
    ['block helper', 'hook:{{#if a}}x{{/if}}'],
    ['syntax error', 'hook:{{id'],
  ])('refuses %s at boot', (_name, source) => {
    expect(() => compileSessionKeyTemplate(source)).toThrow();
  });

  test.prop([fc.string()])(
    'a rendered key is the namespace plus safe characters, or 400',
    (value) => {
      const key = compileSessionKeyTemplate('hook:x:{{v}}');
      try {
        const rendered = key.render({ v: value });
        expect(rendered.startsWith('hook:x:')).toBe(true);
        expect(rendered.slice('hook:x:'.length)).toMatch(/^[A-Za-z0-9._@+-]+$/);
      } catch (err) {
        expect((err as HookError).code).toBe('invalid_session_key');
      }
    },
  );
});

describe('objects and arrays in templates', () => {
  it('a template that interpolates an object renders it as JSON', () => {
    const data = toEvaluatorData({ payload: { user: { login: 'ada', id: 7 }, text: 'hi' } });
    expect(compileTemplate('{{payload.text}} from {{payload.user}}')(data)).toBe(
      'hi from {"login":"ada","id":7}',
    );
  });

  it('a template that interpolates an array renders it as JSON', () => {
    const data = toEvaluatorData({ payload: { labels: [{ name: 'bug' }, 'x', 2] } });
    expect(compileTemplate('labels: {{payload.labels}}')(data)).toBe(
      'labels: [{"name":"bug"},"x",2]',
    );
  });

  it.each([
    ['with', '{{#with payload.name}}{{this}}/{{../payload.id}}{{/with}}'],
    ['a block over a path', '{{#payload.name}}{{this}}/{{../payload.id}}{{/payload.name}}'],
  ])('%s over a plain value may still reach the parent with ../', (_name, source) => {
    const data = toEvaluatorData({ payload: { name: 'ada', id: 7 } });
    expect(compileTemplate(source)(data)).toBe('ada/7');
  });

  it('each over plain values may still reach the parent with ../', () => {
    const data = toEvaluatorData({
      payload: { tags: ['a', 'b'], repo: { name: 'r', ids: [1, 2] } },
    });
    expect(
      compileTemplate(
        '{{#each payload.tags}}{{this}}@{{../payload.repo.name}};{{/each}}{{#with payload.repo}}{{#each ids}}{{this}}{{../name}}{{/each}}{{/with}}',
      )(data),
    ).toBe('a@r;b@r;1r2r');
  });

  it.each([
    ['partial', '{{> header}}'],
    ['partial block', '{{#> layout}}x{{/layout}}'],
    ['inline partial (recursive partial attack)', '{{#*inline "p"}}{{> p}}{{/inline}}{{> p}}'],
    ['decorator', '{{* decorate}}'],
  ])('refuses a %s at boot', (_name, source) => {
    expect(() => compileTemplate(source)).toThrow(/partials|decorators/);
  });
});
