/**
 * Attack: a `lookup` key chosen by the sender that cannot be converted to a property name. An
 * object with its own `toString` key (`{"toString": 1}`) made `{{lookup payload.teams
 * payload.team}}` throw, and a template that throws renders '' as a whole: the sender blanked
 * the whole field, the operator's fixed text and the `default` around it included (a recipient
 * `{{default (lookup ...) "C0OPS"}}` left empty goes to the default route). Such a key now
 * reads nothing, as a key that names nothing does.
 */
import { expect, it } from 'vitest';
import { toEvaluatorData } from '../engine/evaluator-data.ts';
import { compileTemplate } from '../engine/templates.ts';

const render = (source: string, payload: unknown) =>
  compileTemplate(source)(toEvaluatorData({ payload }));

const teams = { ops: 'C0OPS', web: 'C0WEB' };

it.each([
  ['an object with its own toString key', { toString: 1 }],
  ['an object with its own valueOf and toString keys', { valueOf: 'ops', toString: 'ops' }],
  ['a list holding such an object', [{ toString: 'web' }]],
])('a lookup key that is %s (field blanking) reads nothing; the field renders', (_name, team) => {
  const source =
    'Route: {{default (lookup payload.teams payload.team) "C0DEFAULT"}} for {{payload.id}}';
  expect(render(source, { teams, team, id: 7 })).toBe('Route: C0DEFAULT for 7');
});

it.each([
  ['text', 'web', 'C0WEB'],
  ['a number into a list', 1, 'b'],
  ['a name the object lacks', 'sales', ''],
])('a lookup key that is %s reads as before', (_name, key, found) => {
  const payload = { teams, list: ['a', 'b'], key };
  const source =
    typeof key === 'number'
      ? '{{lookup payload.list payload.key}}'
      : '{{lookup payload.teams payload.key}}';
  expect(render(source, payload)).toBe(found);
});
