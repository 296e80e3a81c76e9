/**
 * Attack (on a mapping written carelessly, then by a sender): a `reduce` whose reducer is an
 * array. json-logic evaluates an array to an array of its items' values, so a reducer such as
 * `[{"==": [{"var": "accumulator"}, "x"]}, {"var": "accumulator"}, {"var": "current"}]` nested
 * the accumulator a level deeper at each item, and the comparison turned all of it into text at
 * each step: a 5 KB body of 2,500 items held the event loop for about four seconds (every other
 * request waited). The config check let it through; an array anywhere a reducer's value goes is
 * now refused when the mapping is compiled, naming where.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, RuleError } from '../engine/conditions.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

const GROWING = {
  reduce: [
    { var: 'payload.items' },
    [{ '==': [{ var: 'accumulator' }, 'x'] }, { var: 'accumulator' }, { var: 'current' }],
    0,
  ],
};

it.each([
  ['the reducer itself', GROWING, 'reduce.1'],
  [
    'an argument of the reducer',
    { reduce: [{ var: 'payload.items' }, { '+': [[{ var: 'accumulator' }], 1] }, 0] },
    'reduce.1.+.0',
  ],
])('an array as %s is refused, naming where', (_name, rule, at) => {
  let refused: unknown;
  try {
    compileCondition(rule);
  } catch (err) {
    refused = err;
  }
  expect(refused).toBeInstanceOf(RuleError);
  expect((refused as RuleError).at).toBe(at);
  expect((refused as RuleError).message).toContain('a reduce reducer holds no array value');
});

it('a mapping with such a condition does not boot', async () => {
  await expect(
    startTestServer({
      hooks: {
        mappings: [
          {
            id: 'orders',
            match: { path: 'orders', when: GROWING },
            action: 'wake',
            textTemplate: 'o',
          },
        ],
      },
    }),
  ).rejects.toThrow('a reduce reducer holds no array value');
});

describe('an allowed reducer over a long list', () => {
  let server: TestServer;
  const SUM = {
    '>': [
      {
        reduce: [
          { var: 'payload.items' },
          { '+': [{ var: 'accumulator' }, { var: 'current' }] },
          0,
        ],
      },
      100,
    ],
  };
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'orders',
            match: { path: 'orders', when: SUM },
            action: 'wake',
            textTemplate: 'big order',
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());

  it('still decides', async () => {
    const res = await server.post('orders', { items: Array.from({ length: 2500 }, () => 1) });
    expect(res.status).toBe(200);
  });
});
