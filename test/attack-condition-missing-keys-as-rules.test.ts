/**
 * Attack (on a mapping whose condition takes the keys it checks from the payload, such as
 * `{"missing": {"var": "payload.required"}}`): keys that are JSON-logic rules. json-logic-js's
 * `missing` and `missing_some` run every key through `apply`, so a key that was an object or an
 * array was evaluated as a rule, with every operator and none of the checks made at boot: `log`
 * wrote the sender's text on the server's stdout, a key could claim to be present, and a
 * `reduce` whose `merge` doubles its accumulator held the event loop for 21 s and took 3.3 GB
 * with 28 items (200 bytes of body). A key is now only ever a path.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { compileCondition } from '../engine/conditions.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

const doubling = (items: number) => ({
  reduce: [
    Array.from({ length: items }, () => 0),
    { merge: [{ var: 'accumulator' }, { var: 'accumulator' }] },
    [0],
  ],
});

/** The longest array Array.prototype.concat (what `merge` uses) made while `run` ran. */
async function longestConcat(run: () => Promise<void>): Promise<number> {
  const concat = Array.prototype.concat;
  let longest = 0;
  Array.prototype.concat = function counted(this: unknown[], ...items: unknown[]) {
    const out = concat.apply(this, items);
    longest = Math.max(longest, out.length);
    return out;
  };
  try {
    await run();
  } finally {
    Array.prototype.concat = concat;
  }
  return longest;
}

describe('payload keys given to missing and missing_some', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      hooks: {
        mappings: [
          {
            id: 'complete',
            match: { path: 'complete', when: { '!': { missing: { var: 'payload.required' } } } },
            action: 'wake',
            templates: { text: 'complete: {{payload.id}}' },
          },
          {
            id: 'enough',
            match: {
              path: 'enough',
              when: { '!': { missing_some: [1, { var: 'payload.options' }] } },
            },
            action: 'wake',
            templates: { text: 'enough: {{payload.id}}' },
          },
        ],
      },
    });
  });
  afterAll(() => server.stop());
  afterEach(() => vi.restoreAllMocks());

  const stored = async () => (await server.store.listActions({ limit: 1000 })).length;

  it.each([
    ['missing', 'complete', 'required'],
    ['missing_some', 'enough', 'options'],
  ])(
    '%s: a key that is a log rule (console injection) writes nothing and does not count as present',
    async (_op, hook, field) => {
      const log = vi.spyOn(console, 'log').mockImplementation(() => {});
      const before = await stored();
      const res = await server.post(hook, { id: 1, [field]: [{ log: 'INJECTED LINE' }] });
      expect(res.status).toBe(204);
      expect(log).not.toHaveBeenCalled();
      expect(await stored()).toBe(before);
    },
  );

  it.each([
    ['missing', 'complete', 'required'],
    ['missing_some', 'enough', 'options'],
  ])(
    '%s: a key that is a doubling reduce (memory bomb) builds nothing and is answered',
    async (_op, hook, field) => {
      let status = 0;
      const longest = await longestConcat(async () => {
        status = (await server.post(hook, { id: 2, [field]: [doubling(22)] })).status;
      });
      expect(status).toBe(204);
      // Evaluated as a rule, 22 items made an array of 4,194,304 elements.
      expect(longest).toBeLessThan(1000);
      expect((await server.post('wake', { text: 'still here' })).status).toBe(200);
    },
  );

  it.each([
    ['missing', 'complete', 'required'],
    ['missing_some', 'enough', 'options'],
  ])('%s: keys that are paths still decide', async (_op, hook, field) => {
    const present = await server.post(hook, { id: 3, a: 'x', [field]: ['payload.a'] });
    expect(present.status).toBe(200);
    const absent = await server.post(hook, { id: 4, [field]: ['payload.nope'] });
    expect(absent.status).toBe(204);
  });
});

it.each([
  [
    'a key object naming a present field',
    { missing: { var: 'payload.keys' } },
    { keys: [{ var: 'payload.p' }], p: 'payload.a' },
    true,
  ],
  [
    'missing_some with keys from the payload',
    { missing_some: [1, { var: 'payload.keys' }] },
    { keys: [{ if: [true, 'payload.a', 'payload.b'] }] },
    true,
  ],
  ['literal keys', { missing: ['payload.a', 'payload.b'] }, { a: 1 }, true],
  ['literal keys, all present', { missing: ['payload.a'] }, { a: 1 }, false],
  [
    'missing_some, enough present',
    { missing_some: [1, ['payload.a', 'payload.b']] },
    { a: 1 },
    false,
  ],
])('a payload key is never a rule: %s', (_name, rule, payload, holds) => {
  const data = { payload: { ...payload, a: 'x' }, headers: {}, query: {}, path: 'p', hook: 'h' };
  // Only a literal path names a field: `[object Object]` or `payload.a,...` is missing.
  expect(compileCondition(rule)(data)).toBe(holds);
});
