/**
 * A block parameter named like a helper (`{{#each items as |json|}}`) is a value inside its
 * block: `{{json}}` there renders the item and is not refused as the helper without its value.
 */
import { expect, it } from 'vitest';
import { compileTemplate } from '../engine/templates.ts';

it('a block parameter named like a helper is a value, not a helper call', () => {
  const context = { payload: { labels: [{ name: 'bug' }, { name: 'p1' }] } };
  const render = compileTemplate(
    '{{#each payload.labels as |default|}}{{default.name}}:{{default}};{{/each}}',
  );
  expect(render(context)).toBe('bug:{"name":"bug"};p1:{"name":"p1"};');
});

it('{{json}} naming the block parameter `json` renders the item', () => {
  const render = compileTemplate('{{#each payload.items as |json|}}[{{json}}]{{/each}}');
  expect(render({ payload: { items: ['a', 'b'] } })).toBe('[a][b]');
});
