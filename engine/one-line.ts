/**
 * Text as one line: every run of white space, line breaks of every kind
 * included (CR, LF, VT, FF, NEL, U+2028, U+2029; JavaScript's `\s` alone
 * misses NEL), as one space, trimmed. What a run's summary, a listing or a
 * template's `oneLine` shows cannot start a line of its own. Pure.
 */
import { headUnits } from './text-cut.ts';

const SPACE_RUNS = /[\s\u0085]+/g;

/** `text` on one line. */
export function oneLine(text: string): string {
  return text.replace(SPACE_RUNS, ' ').trim();
}

/** `text` on one line of at most `max` units, ending with `…` where cut. */
export function clipLine(text: string, max: number): string {
  const flat = oneLine(text);
  return flat.length > max ? `${headUnits(flat, max - 1)}…` : flat;
}
