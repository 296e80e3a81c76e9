/**
 * Attack on the CLI's views: invisible characters the terminal view did not escape (soft hyphen,
 * combining grapheme joiner, Hangul fillers, variation selectors, U+E0100...), each drawn 0
 * columns wide, so a wake text "pay...bob" read as "paybob" in `hookgate events`. Every
 * default-ignorable and format character is now escaped, as the console shows it; JSON lines
 * still parse to the same value.
 */
import { expect, it } from 'vitest';
import { jsonLine, terminalText } from '../engine/cli/terminal-text.ts';

const INVISIBLES = [0xad, 0x34f, 0x115f, 0x180e, 0x206a, 0x3164, 0xfe0f, 0xffa0, 0xe0100, 0xe0041];
const text = `pay${INVISIBLES.map((code) => String.fromCodePoint(code)).join('')}bob`;

it('a text line shows every invisible character as an escape', () => {
  const shown = terminalText(text);
  expect(INVISIBLES.filter((code) => shown.includes(String.fromCodePoint(code)))).toEqual([]);
  expect(shown).toContain('\\xad');
  expect(shown).toContain('\\u{e0100}');
});

it('a JSON line escapes them too and parses to the same text', () => {
  const line = jsonLine({ text });
  expect(INVISIBLES.filter((code) => line.includes(String.fromCodePoint(code)))).toEqual([]);
  expect(JSON.parse(line)).toEqual({ text });
});

it('visible text, emoji and accents are left as they are', () => {
  expect(terminalText('café 👍 naïve')).toBe('café 👍 naïve');
});
