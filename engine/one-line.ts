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
  return flatten(text).trim();
}

/**
 * `text` on one line of at most `max` units, ending with `…` where cut. Only a head of the text
 * is flattened, grown until it gives more than `max` units: flattening a whole reply of
 * runtime.maxReplyBytes to keep 280 characters of it (a run's summary) took most of a second
 * for a text of many short words. A head longer than `max` once trimmed is the start of the
 * whole text's line: a run of white space cut at its end is one space either way.
 */
export function clipLine(text: string, max: number): string {
  return clipLineWith(text, max, flatten);
}

/** clipLine with its flattening passed in (a test counts what is flattened). */
export function clipLineWith(text: string, max: number, flat: (part: string) => string): string {
  for (let size = 2 * max + 64; size < text.length; size *= 2) {
    const head = flat(text.slice(0, size)).trim();
    if (head.length > max) return `${headUnits(head, max - 1)}…`;
  }
  const line = flat(text).trim();
  return line.length > max ? `${headUnits(line, max - 1)}…` : line;
}

function flatten(text: string): string {
  return text.replace(SPACE_RUNS, ' ');
}
