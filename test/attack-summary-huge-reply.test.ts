/**
 * Attack: a runner's reply of runtime.maxReplyBytes made of many short words (`a a a ...`).
 * Its run's summary keeps 280 characters on one line, but the whole reply was flattened first,
 * one replacement per word: most of a second held for an 8 MiB reply, at every run. Only a
 * head of the text is flattened now; what it gives is what flattening the whole gave.
 */
import { fc, test } from '@fast-check/vitest';
import { expect, it } from 'vitest';
import { clipLine, clipLineWith, oneLine } from '../engine/one-line.ts';
import { headUnits } from '../engine/text-cut.ts';

/** The line as flattening the whole text gives it. */
function whole(text: string, max: number): string {
  const flat = oneLine(text);
  return flat.length > max ? `${headUnits(flat, max - 1)}…` : flat;
}

const pieces = fc.constantFrom(
  'a',
  'bc',
  ' ',
  '  ',
  '\n',
  '\r\n',
  '\u0085',
  '\u2028',
  '\t',
  '😀',
  'é',
);

test.prop([
  fc.array(pieces, { maxLength: 600 }).map((list) => list.join('')),
  fc.integer({ min: 1, max: 60 }),
])('the clipped line is the whole text flattened and clipped', (text, max) => {
  expect(clipLine(text, max)).toBe(whole(text, max));
});

it('a text of max characters followed by much white space is not marked cut', () => {
  expect(clipLine(`${'x'.repeat(20)}${' '.repeat(5000)}`, 20)).toBe('x'.repeat(20));
});

it('an 8 MiB reply of short words gives its summary line from its head: as much flattened as for 1 MiB', () => {
  const flattened: number[] = [];
  for (const words of [524_000, 4_190_000]) {
    let units = 0;
    const flat = (part: string) => {
      units += part.length;
      return oneLine(part);
    };
    expect(clipLineWith('a '.repeat(words), 280, flat)).toBe(`${'a '.repeat(139)}a…`);
    flattened.push(units);
  }
  expect(flattened[1]).toBe(flattened[0]);
  expect(flattened[0]).toBeLessThan(4_096);
});
