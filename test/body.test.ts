/**
 * The body stage's pure parts: nesting depth and JSON object parsing.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { nestingDepth, parseJsonObject } from '../engine/body.ts';
import type { HookError } from '../engine/errors.ts';

const depthOf = (text: string) => nestingDepth(Buffer.from(text), 1000);

describe('nestingDepth', () => {
  it.each([
    ['{}', 1],
    ['{"a":[1,{"b":2}]}', 3],
    ['{"a":"[[[[{{{{"}', 1],
    ['{"a":"\\"[[[["}', 1],
    ['{"a":"\\\\"}', 1],
    ['[[[]]]', 3],
  ])('%s -> %i', (text, depth) => {
    expect(depthOf(text)).toBe(depth);
  });

  test.prop([fc.json({ depthSize: 'medium' })])('matches the depth of the parsed value', (text) => {
    const measure = (value: unknown): number =>
      value !== null && typeof value === 'object'
        ? 1 + Math.max(0, ...Object.values(value as object).map(measure))
        : 0;
    expect(depthOf(text)).toBe(measure(JSON.parse(text)));
  });

  it('stops early on a deep body (the nesting-bomb attack)', () => {
    const bomb = Buffer.from('['.repeat(1_000_000));
    expect(nestingDepth(bomb, 64)).toBe(65);
  });
});

describe('parseJsonObject', () => {
  const code = (body: Buffer) => {
    try {
      parseJsonObject(body, 10);
      return 'ok';
    } catch (err) {
      return (err as HookError).code;
    }
  };

  it('parses an object', () => {
    expect(parseJsonObject(Buffer.from('{"a":1}'), 10)).toEqual({ a: 1 });
  });

  it('keeps __proto__ as an own key without touching prototypes (prototype pollution)', () => {
    const value = parseJsonObject(Buffer.from('{"__proto__":{"polluted":1}}'), 10);
    expect(Object.hasOwn(value, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it.each([
    ['empty', Buffer.alloc(0)],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
    ['UTF-8 BOM', Buffer.from('\ufeff{}')],
    ['array', Buffer.from('[]')],
    ['too deep', Buffer.from(`{"a":${'['.repeat(20)}${']'.repeat(20)}}`)],
    ['trailing garbage', Buffer.from('{} x')],
  ])('refuses %s with invalid_json', (_name, body) => {
    expect(code(body)).toBe('invalid_json');
  });
});
