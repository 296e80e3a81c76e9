/**
 * The evaluator's view of a payload (engine/evaluator-data.ts): forbidden
 * keys gone at every level, and nothing copied that need not be, so a body
 * dense in small objects costs a walk, not a copy of every object.
 */
import { describe, expect, it } from 'vitest';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import type { Envelope } from '../engine/envelope.ts';
import { ruleData } from '../engine/mapped-route.ts';

describe('evaluator data', () => {
  it('a 255 KB body of 85,000 empty objects: the view is the parsed body itself, no object copied', () => {
    const parsed = JSON.parse(JSON.stringify({ a: Array(85_000).fill({}) }));
    const view = toEvaluatorData(parsed) as { a: unknown[] };
    expect(view).toBe(parsed);
    expect(view.a).toBe(parsed.a);
  });

  it('a __proto__ key deep in a wide body: only the objects on its way are copied, the rest shared', () => {
    const parsed = JSON.parse(
      '{"wide":[{"x":1},{"y":{"__proto__":{"polluted":true},"keep":2}},{"z":3}],"other":{"k":1}}',
    );
    type Tree = { wide: Array<Record<string, object>>; other: object };
    const view = toEvaluatorData(parsed) as Tree;
    expect(view).not.toBe(parsed);
    expect(view.other).toBe(parsed.other);
    expect(view.wide[0]).toBe(parsed.wide[0]);
    expect(view.wide[2]).toBe(parsed.wide[2]);
    const y = view.wide[1]?.['y'] as object;
    expect(Object.hasOwn(y, '__proto__')).toBe(false);
    expect(y).toEqual({ keep: 2 });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('an idempotencyKey template and the accept step read one view of the request', () => {
    const envelope = { payload: { a: 1 }, headers: {}, query: {}, path: '/h', hook: 'h' };
    const first = ruleData(envelope as unknown as Envelope);
    expect(ruleData(envelope as unknown as Envelope)).toBe(first);
  });
});
