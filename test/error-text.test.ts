/**
 * An unexpected error's log text: what an operator needs (the store's "no room left") kept, what
 * a message can quote that is secret (a URL's user info and query, a token) blanked.
 */
import { expect, it } from 'vitest';
import { errorText } from '../engine/observe/error-text.ts';

it('keeps a store error whole', () => {
  expect(errorText(new Error('no room left'))).toBe('Error: no room left');
  expect(errorText('thrown text')).toBe('string');
});

it("blanks a URL's credentials and query, and tokens, wherever they are in the message", () => {
  const text = errorText(
    new TypeError(
      'fetch failed for https://bot:sekrit@api.example.test/send?key=abcdef123456 (Bearer abcdefgh12345678)\nmore',
    ),
  );
  expect(text).toBe(
    'TypeError: fetch failed for https://***@api.example.test/send?*** (Bearer *** more',
  );
  expect(text).not.toContain('sekrit');
  expect(errorText(new Error('token=0123456789abcdef rejected'))).toBe('Error: token=*** rejected');
});

it('is cut to one bounded line', () => {
  expect(errorText(new Error('x'.repeat(10_000))).length).toBeLessThanOrEqual(310);
});
