/**
 * Templates render within a budget: amplifying templates (a loop repeating a
 * large value, nested loops, long separators, repeated interpolations) stop
 * at the bound with RenderLimitError instead of building the string first.
 */
import { describe, expect, it } from 'vitest';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import { RenderBudget, RenderLimitError } from '../engine/render-budget.ts';
import { compileSessionKeyTemplate } from '../engine/session-key-template.ts';
import { compileTemplate } from '../engine/templates.ts';

const limits = { fieldBytes: 4096, actionBytes: 8192, requestBytes: 16_384 };

/** The bound a template hit, or 'none' with the rendered length. */
function outcome(source: string, payload: unknown): string {
  try {
    const out = compileTemplate(source)(toEvaluatorData({ payload }), new RenderBudget(limits));
    return `none:${out.length}`;
  } catch (err) {
    if (err instanceof RenderLimitError) return err.limit;
    throw err;
  }
}

const commits = Array.from({ length: 1000 }, (_, i) => ({ id: i, message: `m${i}` }));
const numbers = Array.from({ length: 20_000 }, () => 0);

describe('amplification attacks stop at the bound', () => {
  it.each([
    [
      'each repeating a large value of the parent (each amplification)',
      '{{#each payload.commits}}{{../payload.description}}{{/each}}',
      { commits, description: 'd'.repeat(1000) },
      'field',
    ],
    [
      'each with large static text over a long array',
      `{{#each payload.numbers}}${'static '.repeat(100)}{{/each}}`,
      { numbers },
      'field',
    ],
    [
      'nested each over the same array printing nothing (quadratic loop)',
      '{{#each payload.numbers}}{{#each ../payload.numbers}}{{/each}}{{/each}}',
      { numbers },
      'work',
    ],
    [
      'nested each printing small values (nested amplification)',
      '{{#each payload.commits}}{{#each ../payload.commits}}{{id}}{{/each}}{{/each}}',
      { commits },
      'work',
    ],
    [
      'join with a long separator taken from the payload',
      '{{join payload.numbers payload.separator}}',
      { numbers, separator: 's'.repeat(1000) },
      'field',
    ],
    [
      'repeated interpolations of one large value',
      '{{payload.a}}{{payload.a}}{{payload.a}}{{payload.a}}{{payload.a}}',
      { a: 'x'.repeat(1000) },
      'field',
    ],
    [
      'a block over a payload path (implicit each)',
      '{{#payload.numbers}}xxxxxxxx{{/payload.numbers}}',
      { numbers },
      'work',
    ],
    [
      'json of the whole payload in a loop, truncated (hidden work)',
      '{{#each payload.commits}}{{truncate (json ../payload) 3}}{{/each}}',
      { commits },
      'work',
    ],
    [
      'upper of a large value in a loop (hidden work)',
      '{{#each payload.commits}}{{truncate (upper ../payload.big) 1}}{{/each}}',
      { commits, big: 'b'.repeat(3000) },
      'work',
    ],
    [
      'eq of two long strings in a loop (hidden work)',
      '{{#each payload.numbers}}{{#if (eq ../payload.s ../payload.t)}}{{/if}}{{/each}}',
      { numbers, s: `${'s'.repeat(2000)}1`, t: `${'s'.repeat(2000)}2` },
      'work',
    ],
  ])('%s', (_name, source, payload, limit) => {
    expect(outcome(source, payload)).toBe(limit);
  });

  it('renders the same templates within the bound for small payloads', () => {
    expect(
      outcome('{{#each payload.commits}}{{../payload.description}}{{/each}}', {
        commits: commits.slice(0, 3),
        description: 'd',
      }),
    ).toBe('none:3');
  });

  it('stops the each amplification without building the whole string first', () => {
    const description = 'd'.repeat(100_000);
    const many = Array.from({ length: 10_000 }, (_, i) => ({ id: i }));
    const template = compileTemplate(
      '{{#each payload.commits}}{{../payload.description}}{{/each}}',
    );
    const before = process.memoryUsage().heapUsed;
    expect(() => template(toEvaluatorData({ payload: { commits: many, description } }))).toThrow(
      RenderLimitError,
    );
    // 10,000 × 100 KB would be 1 GB; the default field bound stops it near 256 KiB.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 1024 * 1024);
  });

  it('bounds a session-key template like any other field', () => {
    const key = compileSessionKeyTemplate('hook:x:{{payload.a}}');
    expect(() =>
      key.render(toEvaluatorData({ payload: { a: 'a'.repeat(10_000) } }), new RenderBudget(limits)),
    ).toThrow(RenderLimitError);
  });
});

describe('the budget', () => {
  it('sums fields into the action and actions into the request', () => {
    const budget = new RenderBudget(limits);
    budget.startAction();
    budget.account(4000);
    budget.account(4000);
    expect(() => budget.account(4000)).toThrow(expect.objectContaining({ limit: 'action' }));
    const request = new RenderBudget(limits);
    for (let i = 0; i < 4; i++) {
      request.startAction();
      request.account(4000);
    }
    request.startAction();
    expect(() => request.account(1000)).toThrow(expect.objectContaining({ limit: 'request' }));
  });
});
