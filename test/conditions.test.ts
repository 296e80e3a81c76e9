/**
 * JSON-logic conditions: validation at boot, own-property lookups, totality.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  ConditionBudgetExceeded,
  ConditionUnreadable,
  compileCondition,
  RuleError,
} from '../engine/conditions.ts';
import { toEvaluatorData } from '../engine/evaluator-data.ts';

const data = toEvaluatorData({
  payload: { type: 'push', n: 3, tags: ['a', 'b'], nested: { ok: true }, empty: {} },
  headers: { 'x-github-event': 'push' },
  query: {},
  path: '/hooks/github',
  method: 'POST',
});

describe('evaluation', () => {
  it.each([
    [{ '==': [{ var: 'payload.type' }, 'push'] }, true],
    [{ '==': [{ var: 'headers.x-github-event' }, 'issues'] }, false],
    [{ '>=': [{ var: 'payload.n' }, 2] }, true],
    [{ in: ['b', { var: 'payload.tags' }] }, true],
    [{ var: 'payload.nested.ok' }, true],
    [{ '!': { var: 'payload.missing.deep' } }, true],
    [{ missing: ['payload.type', 'payload.nope'] }, true],
    // As the README warns: a missing field reads as null, and null < 3 holds; the guard does not.
    [{ '<': [{ var: 'payload.severity' }, 3] }, true],
    [
      { and: [{ '!!': { var: 'payload.severity' } }, { '<': [{ var: 'payload.severity' }, 3] }] },
      false,
    ],
    [{ some: [{ var: 'payload.tags' }, { '==': [{ var: '' }, 'a'] }] }, true],
    [{ and: [true, { '==': [{ var: 'method' }, 'POST'] }] }, true],
    [true, true],
    [false, false],
  ])('%j -> %s', (rule, expected) => {
    expect(compileCondition(rule)(data)).toBe(expected);
  });

  it.each([
    ['hasOwnProperty', { var: 'payload.empty.hasOwnProperty' }],
    ['toString', { var: 'payload.empty.toString' }],
    ['array method', { var: 'payload.tags.map' }],
    ['dynamic __proto__ path', { var: { cat: ['payload.', '__proto__'] } }],
  ])('never reads inherited properties (%s)', (_name, rule) => {
    expect(compileCondition(rule)(data)).toBe(false);
  });

  it('reports inherited names as missing', () => {
    expect(compileCondition({ missing: ['payload.empty.hasOwnProperty'] })(data)).toBe(true);
  });

  it('is false, not a crash, when an operator throws', () => {
    const rule = { in: ['x', { var: 'payload.n' }] };
    expect(compileCondition(rule)(data)).toBe(false);
  });

  it('is false, not a refusal, when a prototype-free query or form object is compared with text', () => {
    // The query, the headers and a form's fields are prototype-free objects, which JavaScript
    // cannot turn into text either; nothing in them is the sender's doing.
    const query = Object.assign(Object.create(null), { a: '1' });
    const form = toEvaluatorData({
      query,
      payload: Object.assign(Object.create(null), { a: '1' }),
    });
    expect(compileCondition({ '==': [{ var: 'payload' }, 'x'] })(form)).toBe(false);
    expect(compileCondition({ '!=': [{ var: 'query' }, ''] })(form)).toBe(false);
  });

  it('walks a request whose conditions all fail once, not once per mapping (many-mapping failure attack)', () => {
    // Every mapping's condition fails (a prototype-free object compared with text): each failure
    // looks through the data for an unconvertible object, for a body of a megabyte a walk of it all.
    let reads = 0;
    const payload = { o: Object.create(null) };
    Object.defineProperty(payload, 'rest', {
      enumerable: true,
      get: () => {
        reads++;
        return 'x';
      },
    });
    const request = Object.assign(Object.create(null), { payload });
    const failing = compileCondition({ '==': [{ var: 'payload.o' }, 'x'] });
    for (let mapping = 0; mapping < 20; mapping++) expect(failing(request)).toBe(false);
    expect(reads).toBe(1);
  });

  it('is false, not a refusal, for a failure over data whose only odd key is valueOf (it converts)', () => {
    const data = toEvaluatorData({ payload: { amount: { valueOf: 1 }, o: Object.create(null) } });
    expect(compileCondition({ '==': [{ var: 'payload.o' }, 'x'] })(data)).toBe(false);
  });

  it('refuses (ConditionUnreadable) when the data holds an object with its own toString', () => {
    const hostile = toEvaluatorData({ payload: { repo: { toString: 1 } } });
    expect(() =>
      compileCondition({ '!=': [{ var: 'payload.repo' }, 'acme/app'] })(hostile),
    ).toThrow(ConditionUnreadable);
  });
});

describe('evaluation work', () => {
  const rule = {
    some: [
      { var: 'payload.rows' },
      { some: [{ var: 'cells' }, { '==': [{ var: '' }, 'needle'] }] },
    ],
  };
  const rows = (needleAt: number) =>
    Array.from({ length: 400 }, (_, i) => ({
      cells: Array.from({ length: 50 }, (_, j) => (i * 50 + j === needleAt ? 'needle' : 'ab')),
    }));

  it('matches a needle found within the lookup budget', () => {
    expect(compileCondition(rule)(toEvaluatorData({ payload: { rows: rows(100) } }))).toBe(true);
  });

  it('stops a wide payload under nested some at the lookup budget (wide JSON attack)', () => {
    // 20,000 cells: the needle is past MAX_LOOKUPS, so the evaluation stops, and says so
    // (a "no match" would let the sender pass this mapping by for the next one).
    expect(() =>
      compileCondition(rule)(toEvaluatorData({ payload: { rows: rows(19_999) } })),
    ).toThrow(ConditionBudgetExceeded);
    // The budget is per evaluation: the next request starts afresh.
    expect(compileCondition(rule)(toEvaluatorData({ payload: { rows: rows(100) } }))).toBe(true);
  });
});

describe('substring search attack (in)', () => {
  const rule = { in: [{ var: 'payload.needle' }, { var: 'payload.text' }] };
  // V8's native search takes about 25 s on this pair (quadratic); a linear search, milliseconds.
  const needle = `${'a'.repeat(100_000)}b${'a'.repeat(100_000)}`;
  const text = 'a'.repeat(1_000_000);

  it('in with a needle the native search is quadratic on finishes and answers right', () => {
    const condition = compileCondition(rule);
    expect(condition(toEvaluatorData({ payload: { needle, text } }))).toBe(false);
    expect(condition(toEvaluatorData({ payload: { needle, text: `${text}${needle}` } }))).toBe(
      true,
    );
  }, 10_000);

  const ab = (min: number, max: number) =>
    fc.string({ unit: fc.constantFrom('a', 'b'), minLength: min, maxLength: max });
  test.prop([ab(0, 600), ab(65, 120), fc.nat(600)])(
    'in over strings agrees with String.prototype.includes (needles past the native cut-off)',
    (haystack, other, at) => {
      const condition = compileCondition({ in: [{ var: 'payload.n' }, { var: 'payload.h' }] });
      for (const n of [other, haystack.slice(at % 400, (at % 400) + 65 + (at % 50))]) {
        const subject = toEvaluatorData({ payload: { n, h: haystack } });
        // json-logic: an empty haystack contains nothing.
        expect(condition(subject)).toBe(haystack !== '' && haystack.includes(n));
      }
    },
  );
});

describe('validation at boot', () => {
  it.each([
    ['unknown operator', { regex: ['a', 'b'] }, 'regex'],
    ['log operator', { log: 'x' }, 'log'],
    ['two operators', { '==': [1, 1], '!=': [1, 2] }, 'exactly one'],
    ['__proto__ path', { var: 'payload.__proto__.x' }, '__proto__'],
    ['constructor path', { '==': [{ var: 'constructor' }, 1] }, 'constructor'],
    ['prototype in missing', { missing: ['a.prototype'] }, 'prototype'],
    ['prototype in missing_some', { missing_some: [1, ['a', 'prototype']] }, 'prototype'],
    ['var with default', { var: ['__proto__', 1] }, '__proto__'],
    [
      'a growing reduce accumulator (quadratic merge attack)',
      {
        reduce: [{ var: 'payload.a' }, { merge: [{ var: 'accumulator' }, { var: 'current' }] }, []],
      },
      'merge',
    ],
    [
      'a doubling reduce accumulator (exponential cat attack)',
      {
        reduce: [
          { var: 'payload.a' },
          { cat: [{ var: 'accumulator' }, { var: 'accumulator' }] },
          'x',
        ],
      },
      'cat',
    ],
    [
      'a reduce that keeps a large accumulator and re-reads it (if)',
      {
        reduce: [
          { var: 'payload.a' },
          { if: [{ '==': [{ var: 'accumulator' }, 1] }, 1, { var: 'accumulator' }] },
          { var: 'payload.a' },
        ],
      },
      'if',
    ],
    [
      'a reduce that keeps a large accumulator through a computed var fallback',
      {
        reduce: [
          { var: 'payload.a' },
          { var: [{ '==': [{ var: 'accumulator' }, 1] }, { var: 'accumulator' }] },
          { var: 'payload.a' },
        ],
      },
      'literal path',
    ],
  ])('refuses %s', (_name, rule, mention) => {
    expect(() => compileCondition(rule)).toThrow(RuleError);
    expect(() => compileCondition(rule)).toThrow(mention);
  });

  it('accepts a reduce that computes a number', () => {
    const rule = {
      '>': [
        {
          reduce: [{ var: 'payload.a' }, { '+': [{ var: 'accumulator' }, { var: 'current' }] }, 0],
        },
        5,
      ],
    };
    expect(compileCondition(rule)(toEvaluatorData({ payload: { a: [1, 2, 3] } }))).toBe(true);
  });

  it('refuses rules nested too deep', () => {
    let rule: unknown = true;
    for (let i = 0; i < 40; i++) rule = { '!': [rule] };
    expect(() => compileCondition(rule)).toThrow(/deeper/);
  });

  it('names where in the rule the problem is', () => {
    try {
      compileCondition({ and: [true, { bogus: 1 }] });
      expect.unreachable();
    } catch (err) {
      expect((err as RuleError).at).toBe('and.1');
    }
  });
});

describe('properties', () => {
  const pathArb = fc.array(
    fc.constantFrom(
      'payload',
      'headers',
      'a',
      'b',
      '0',
      '__proto__',
      'constructor',
      'toString',
      'length',
    ),
    {
      minLength: 1,
      maxLength: 4,
    },
  );

  test.prop([fc.jsonValue(), pathArb])(
    'evaluation is total and reads own properties only',
    (value, segments) => {
      const subject = toEvaluatorData({ payload: value });
      const path = segments.join('.');
      const forbidden = segments.some((s) => s === '__proto__' || s === 'constructor');
      if (forbidden) {
        expect(() => compileCondition({ var: path })).toThrow(RuleError);
        return;
      }
      const result = compileCondition({ '!!': { var: path } })(subject);
      // Recompute with own-property lookups only.
      let current: unknown = subject;
      for (const segment of segments) {
        current =
          current !== null && typeof current === 'object' && Object.hasOwn(current, segment)
            ? (current as Record<string, unknown>)[segment]
            : undefined;
      }
      const truthy = Array.isArray(current) ? current.length > 0 : Boolean(current);
      expect(result).toBe(truthy);
    },
  );

  // An object with its own toString or valueOf key: what JavaScript cannot convert.
  const unconvertible = (value: unknown): boolean =>
    value !== null &&
    typeof value === 'object' &&
    (Object.hasOwn(value, 'toString') ||
      Object.hasOwn(value, 'valueOf') ||
      Object.values(value).some(unconvertible));

  test.prop([fc.jsonValue()])(
    'a rule answers, or refuses only a value it cannot convert, whatever the data',
    (value) => {
      const rules = [
        { '==': [{ var: 'payload.a' }, 1] },
        { in: [{ var: 'payload.a' }, { var: 'payload.b' }] },
        { reduce: [{ var: 'payload' }, { '+': [{ var: 'current' }, { var: 'accumulator' }] }, 0] },
        { substr: [{ var: 'payload' }, 1] },
        { map: [{ var: 'payload' }, { var: 'x' }] },
      ];
      for (const rule of rules) {
        let outcome: string;
        try {
          outcome = typeof compileCondition(rule)(toEvaluatorData({ payload: value }));
        } catch (err) {
          if (!(err instanceof ConditionUnreadable)) throw err;
          outcome = 'refused';
        }
        expect(outcome).toBe(unconvertible(value) ? outcome : 'boolean');
      }
    },
  );

  test.prop([fc.jsonValue()])('evaluator data has no forbidden keys at any level', (value) => {
    const walk = (v: unknown): void => {
      if (v === null || typeof v !== 'object') return;
      for (const key of ['__proto__', 'constructor', 'prototype'])
        expect(Object.hasOwn(v, key)).toBe(false);
      for (const item of Object.values(v)) walk(item);
    };
    walk(toEvaluatorData(value));
  });
});
