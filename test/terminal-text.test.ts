/**
 * The terminal-safety policy of CLI output: no control, bidi, zero-width or
 * tag character gets through, and JSON lines still parse to the exact value.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { jsonLine, terminalText } from '../engine/cli/terminal-text.ts';

const CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding raw controls is the test.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|[\u{e0000}-\u{e007f}]/u;

// Strings rich in controls, bidi characters and ordinary text.
const hostile = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0x9f }).map((c) => String.fromCharCode(c)),
    fc.constantFrom(
      ...['\u061c', '\u200b', '\u200d', '\u200e', '\u200f', '\u2028', '\u202a', '\u202e'],
      ...['\u2060', '\u2066', '\u2069', '\ufeff', '\u{e0041}', '\u{e007f}', '\u{1f600}'],
    ),
    fc.string({ minLength: 1, maxLength: 1 }),
    // Any UTF-16 unit: lone surrogate halves too, and pieces of tag characters' pairs.
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\udb40', '\udc41', '\ud83d'),
  ),
});

describe('terminal-safe CLI output', () => {
  test.prop([hostile])('a text line never carries a control or bidi character', (text) => {
    expect(terminalText(text)).not.toMatch(CONTROLS);
  });

  // Each run's first key is its own: Node 24's JSON.parse reuses keys of objects it parsed
  // before with the same keys in front, and misreads an escaped key after one that ended in a
  // backslash (attack-json-backslash-key.test.ts), a run's `\\` key then failing a later run.
  let run = 0;
  test.prop([hostile])('a JSON line carries none either and parses to the same value', (text) => {
    const value = { [`run ${run++}`]: 0, text, [text]: 1 };
    const line = jsonLine(value);
    expect(line).not.toMatch(CONTROLS);
    expect(JSON.parse(line)).toEqual(value);
  });
});
