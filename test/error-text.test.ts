/**
 * An unexpected error's log text: a store's error with its message (what an operator needs to
 * see), any other by its kind and code only (a message may quote a URL with credentials).
 */
import { DatabaseSync } from 'node:sqlite';
import { expect, it } from 'vitest';
import { errorText } from '../engine/observe/error-text.ts';

it("gives a store's error with its message", () => {
  const db = new DatabaseSync(':memory:');
  let thrown: unknown;
  try {
    db.exec(`CREATE TABLE t (x);
      CREATE TRIGGER full BEFORE INSERT ON t BEGIN SELECT RAISE(ABORT, 'no room left'); END;
      INSERT INTO t VALUES (1);`);
  } catch (err) {
    thrown = err;
  }
  expect(errorText(thrown)).toContain('no room left');
  const pgError = Object.assign(new Error('password authentication failed for user "hookgate"'), {
    code: '28P01',
  });
  expect(errorText(pgError)).toBe(
    'Error 28P01: password authentication failed for user "hookgate"',
  );
});

it('names any other error by its kind and code only', () => {
  const fetchError = Object.assign(
    new TypeError('fetch failed for https://bot:sekrit@api.example.test/bot123:ABC/send?key=x'),
    { code: 'ECONNREFUSED' },
  );
  expect(errorText(fetchError)).toBe('TypeError ECONNREFUSED');
  expect(errorText(new URIError('URI malformed at https://u:p@h/'))).toBe('URIError');
  expect(errorText('thrown text')).toBe('string');
});

it('is cut to one bounded line', () => {
  const long = Object.assign(new Error(`a\n${'x'.repeat(10_000)}`), { code: 'ERR_SQLITE_ERROR' });
  const text = errorText(long);
  expect(text).not.toContain('\n');
  expect(text.length).toBeLessThanOrEqual(330);
});
