/**
 * The console (a static script in the browser) and the CLI views keep their
 * own lists of the characters shown as escapes; the README says the console
 * shows them as the CLI does. Every code point is checked against both, so
 * the two cannot drift apart: the only difference is tab and line ends,
 * which the console's multi-line views keep and the CLI's lines escape.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { terminalText } from '../engine/cli/terminal-text.ts';
import { ROOT } from './helpers/process.ts';

const script = readFileSync(path.join(ROOT, 'engine/admin/console/console.js'), 'utf8');
const literal = /const DISGUISING =\s*(?:\/\/[^\n]*\n\s*)?(\/.+\/[a-z]*);/.exec(script)?.[1];
// The console's own regular expression, as the browser runs it.
const disguising = new Function(`return ${literal};`)() as RegExp;

it('the console escapes exactly what the CLI escapes, but tab and line ends', () => {
  expect(literal).toBeDefined();
  const differ: string[] = [];
  const points = [...Array(0x10000).keys(), ...Array.from({ length: 0x80 }, (_, i) => 0xe0000 + i)];
  for (const point of points) {
    if (point >= 0xd800 && point <= 0xdfff) continue;
    const char = String.fromCodePoint(point);
    const inConsole = new RegExp(disguising.source, disguising.flags.replace('g', '')).test(char);
    const inCli = terminalText(char) !== char;
    const kept = char === '\t' || char === '\n' || char === '\r';
    if (inConsole !== (inCli && !kept)) differ.push(point.toString(16));
  }
  expect(differ).toEqual([]);
});
