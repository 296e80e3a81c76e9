/**
 * Attack: an Idempotency-Key sent again with a payload that differs only in a number too large
 * for a double. `1e400` parses to Infinity and `-1e400` to -Infinity, which the fingerprint's
 * JSON wrote as `null`, as it writes `null` itself: the second request was answered as a replay
 * of the first (200, `idempotent-replayed`, nothing stored) though a template renders it
 * differently. The same key with a different payload is 409.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { canonicalJson } from '../engine/idempotency.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    hooks: {
      mappings: [
        { id: 'echo', match: { path: 'echo' }, templates: { message: 'amount {{amount}}' } },
      ],
    },
  });
});
afterAll(() => server.stop());

const post = (body: string, key: string) =>
  server.post('echo', body, { headers: { 'idempotency-key': key } });

it.each([
  ['-1e400', '1e400'],
  ['null', '1e400'],
  ['null', '-1e400'],
])('%s after %s under the same key is 409, not a replay', async (second, first) => {
  const key = `k-${first}-${second}`;
  expect((await post(`{"amount":${first}}`, key)).status).toBe(200);
  const again = await post(`{"amount":${second}}`, key);
  expect(again.status).toBe(409);
  expect(again.headers.get('idempotent-replayed')).toBeNull();
});

it('the same huge number again under the same key is a replay', async () => {
  expect((await post('{"amount":1e400}', 'k-same')).status).toBe(200);
  const again = await post('{"amount":1e401}', 'k-same');
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
});

// JSON values as a parser gives them, huge numbers (±Infinity) included; -0 reads as 0.
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.constantFrom(null, true, false, Infinity, -Infinity),
    fc.double({ noNaN: true }).map((n) => (Object.is(n, -0) ? 0 : n)),
    fc.string(),
  ),
  node: fc.oneof(
    { depthSize: 'small' },
    tie('leaf'),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fc.string(), tie('node'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).node;

// A few leaves in small shapes: pairs that differ in one leaf come up often.
const near = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, Infinity, -Infinity, 0, 1, '', 'null', 'Infinity'),
    fc.array(tie('node'), { maxLength: 2 }),
    fc.dictionary(fc.constantFrom('a', 'b'), tie('node'), { maxKeys: 2, noNullPrototype: true }),
  ),
})).node;

it('two payloads have one fingerprint exactly when they are the same value', () => {
  for (const values of [value, near]) {
    fc.assert(
      fc.property(values, values, (a, b) => {
        expect(canonicalJson(a) === canonicalJson(b)).toBe(isDeepStrictEqual(a, b));
      }),
      { numRuns: 300 },
    );
  }
  // And key order never matters.
  fc.assert(
    fc.property(fc.dictionary(fc.string(), value, { noNullPrototype: true }), (record) => {
      const reversed = Object.fromEntries(Object.entries(record).reverse());
      expect(canonicalJson(reversed)).toBe(canonicalJson(record));
    }),
  );
});
