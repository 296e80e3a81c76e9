/**
 * Block contexts in templates: Handlebars compares each block's new context
 * with the enclosing one using `!=` (to track `../`). Between an object and a
 * plain value, that loose comparison converts: an array to a string (a join
 * over everything nested in it), an object with a `toString` key throws, a
 * long string to a number. A payload shaped for it made that work, repeated
 * by every loop around the block and charged to no bound, hold the event loop
 * for minutes, or blank a whole field.
 */
import { describe, expect, it } from 'vitest';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import { RenderBudget, RenderLimitError } from '../engine/render-budget.ts';
import { compileTemplate } from '../engine/templates.ts';

const limits = { fieldBytes: 4096, actionBytes: 8192, requestBytes: 16_384 };

/** The bound a template hit, or 'none' with what it rendered. */
function outcome(source: string, payload: unknown): string {
  try {
    return `none:${compileTemplate(source)(toEvaluatorData({ payload }), new RenderBudget(limits))}`;
  } catch (err) {
    if (err instanceof RenderLimitError) return err.limit;
    throw err;
  }
}

describe('context coercion attacks', () => {
  it('a large nested array entered by a block inside a loop over plain values (array join amplification) renders promptly', () => {
    // 2,000 zeros and 60,000 empty arrays: about 190 KB of JSON, under the default body limit.
    const payload = {
      xs: Array.from({ length: 2000 }, () => 0),
      big: Array.from({ length: 60_000 }, () => []),
    };
    const template = compileTemplate(
      '{{#each payload.xs}}{{#with ../payload.big}}{{/with}}{{/each}}{{#each payload.rows}}{{#each this}}{{/each}}{{../hook}}{{/each}}',
    );
    const data = toEvaluatorData({ payload: { ...payload, rows: [[...payload.xs, payload.big]] } });
    // Each block entry converted the whole array to text (Array.prototype.toString, which joins
    // every nested array): about 15 s before. Counted, not timed.
    const join = Array.prototype.join;
    let joins = 0;
    Array.prototype.join = function counted(this: unknown[], ...args: [string?]) {
      joins++;
      return join.apply(this, args);
    };
    let bound = 'none';
    try {
      template(data);
    } catch (err) {
      if (!(err instanceof RenderLimitError)) throw err;
      bound = err.limit;
    } finally {
      Array.prototype.join = join;
    }
    expect(joins).toBeLessThan(100);
    expect(['none', 'work']).toContain(bound);
  });

  it.each([
    [
      'a long numeric string entered by a block inside a loop over numbers (number parsing amplification)',
      '{{#each payload.xs}}{{#with ../payload.s}}{{/with}}{{/each}}',
    ],
    [
      'a loop over numbers inside a block over a long numeric string',
      '{{#with payload.s}}{{#each ../payload.xs}}{{/each}}{{/with}}',
    ],
    [
      'an implicit block over numbers inside a block over a long numeric string',
      '{{#with payload.s}}{{#../payload.xs}}{{/../payload.xs}}{{/with}}',
    ],
  ])('%s is charged as work', (_name, source) => {
    const payload = { xs: Array.from({ length: 100 }, () => 0), s: '1'.repeat(10_000) };
    expect(outcome(source, payload)).toBe('work');
  });

  it('an object with a toString key entered by a block inside a loop (field blanking) renders as usual', () => {
    const source =
      'Tags:{{#each payload.tags}} {{this}}{{#with ../payload.user}}/{{name}}{{/with}}{{/each}}';
    expect(outcome(source, { tags: ['a', 'b'], user: { name: 'ada', toString: 1 } })).toBe(
      'none:Tags: a/ada b/ada',
    );
  });

  it('an array loosely equal to the loop value (depth confusion) does not change what ../ reads', () => {
    const source =
      '{{#each payload.nums}}[{{#with ../payload.arr}}{{../../payload.label}}{{/with}}]{{/each}}';
    expect(outcome(source, { nums: [5, 6], arr: [5], label: 'L' })).toBe('none:[L][L]');
  });
});
