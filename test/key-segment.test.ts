/**
 * keySegment: any text becomes one valid session-key segment, injectively
 * (two senders can never collide into one session), readably for names
 * like `owner/repo`.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import { decodeKeySegment, keySegment } from '../engine/key-segment.ts';
import { SAFE_KEY_VALUE } from '../engine/session-key-template.ts';
import { compileSessionKeyTemplate } from '../engine/session-key-template.ts';
import { compileTemplate } from '../engine/templates.ts';

describe('keySegment', () => {
  it.each([
    ['owner/repo', 'owner@repo'],
    ['vercel/next.js', 'vercel@next.js'],
    ['my_org/my-repo', 'my_org@my-repo'],
    ['a@b', 'a+40b'],
    ['a+b', 'a+2Bb'],
    ['two words', 'two+20words'],
    ['Zürich', 'Z+FCrich'],
    ['日本', '+u65E5+u672C'],
    ['a:b', 'a+3Ab'],
  ])('%s -> %s', (input, segment) => {
    expect(keySegment(input)).toBe(segment);
  });

  test.prop([fc.string({ unit: 'binary', minLength: 1 })])(
    'always gives a valid segment',
    (input) => {
      expect(keySegment(input)).toMatch(SAFE_KEY_VALUE);
    },
  );

  test.prop([fc.string({ unit: 'binary' })])(
    'is decoded back to its input (injective)',
    (input) => {
      expect(decodeKeySegment(keySegment(input))).toBe(input);
    },
  );

  test.prop([fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })])(
    'never maps two different inputs to one segment (collision attack)',
    (a, b) => {
      fc.pre(a !== b);
      expect(keySegment(a)).not.toBe(keySegment(b));
    },
  );

  test.prop([fc.constantFrom('/', '@', '+', '.', '+2F', '@40', '%2F', '／')], { numRuns: 50 })(
    'look-alikes of the slash and of escapes stay distinct',
    (lookAlike) => {
      expect(keySegment(`a${lookAlike}b`) === keySegment('a/b')).toBe(lookAlike === '/');
    },
  );

  it('is available in templates and session-key templates', () => {
    const data = toEvaluatorData({ payload: { repository: { full_name: 'octocat/hello world' } } });
    expect(compileTemplate('{{keySegment payload.repository.full_name}}')(data)).toBe(
      'octocat@hello+20world',
    );
    const key = compileSessionKeyTemplate(
      'hook:github:{{keySegment payload.repository.full_name}}',
    );
    expect(key.render(data)).toBe('hook:github:octocat@hello+20world');
  });
});
