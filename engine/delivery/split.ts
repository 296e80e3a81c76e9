/**
 * Splitting a long reply into parts a product accepts: at paragraph, then
 * line, then word boundaries; never inside a surrogate pair; an open code
 * fence is closed at the end of a part and reopened in the next.
 */
import { headUnits } from '../text-cut.ts';

const FENCE = '```';
const LEADING_SPACE = /^\s+/;

/**
 * Most parts one reply is sent in. A runner's reply may be up to runtime.maxReplyBytes (1 MiB):
 * unbounded, that is hundreds of API calls to one chat for one request. The rest of the reply
 * stays in the store (`hookgate runs`).
 */
export const MAX_PARTS = 20;

/**
 * A part's length as the product counts it (its UTF-16 code units unless the adapter says);
 * never less than its units.
 */
export type Measure = (part: string) => number;
const UNITS: Measure = (part) => part.length;

/**
 * The parts to send of `text`: at most `maxParts`, the last one then ending with a note of what
 * was left out. Only as much of the text is prepared (the product's escapes, `prepare`) and
 * split as the parts sent hold: a head of it, grown until the parts end inside it. Splitting a
 * whole reply of `runtime.maxReplyBytes` measured every part of it with the product's measure
 * (a regex or a JSON.stringify each), which held the event loop for most of a second for a
 * megabyte of `&` sent in 20 parts; preparing it whole cost up to 70 ms a megabyte more. What
 * the head's end cuts (a link, a mention) lies past the parts sent.
 */
export function replyParts(
  text: string,
  max: number,
  measure: Measure = UNITS,
  prepare: (text: string) => string = (whole) => whole,
  maxParts = MAX_PARTS,
): string[] {
  for (let size = maxParts * max * 2 + 4096; ; size *= 2) {
    const whole = size >= text.length;
    const head = whole ? text : headUnits(text, size);
    const { parts, rest } = splitHead(prepare(head), max, measure, maxParts);
    if (rest.trim().length > 0)
      return cut(parts, rest.length + text.length - head.length, max, measure);
    if (whole) return parts;
  }
}

/** The parts with the last one cut to end with the note of `left` units not sent. */
function cut(parts: readonly string[], left: number, max: number, measure: Measure): string[] {
  const source = parts[parts.length - 1] as string;
  // Reserved for the note: the number in it is at most this one, so the note no longer.
  const note = (units: number) =>
    `\n\n[reply cut: about ${units} more characters not sent; the whole reply is in hookgate runs]`;
  const reserve = note(source.length + left).length;
  // The cut part may have lost the fence closing it: closed again before the note.
  const closing = `\n${FENCE}`;
  const ending = (head: string) => {
    const tail = note(source.length - head.length + left);
    return isFenceOpen(head) ? `${head}${closing}${tail}` : head + tail;
  };
  let units = Math.max(0, max - reserve - closing.length);
  let last = ending(headUnits(source, units));
  // Shrunk until the product's count fits too (escapes can make a part count more than it has).
  while (units > 0 && measure(last) > max) {
    units = Math.max(0, Math.floor((units * max) / measure(last)) - 1);
    last = ending(headUnits(source, units));
  }
  return [...parts.slice(0, -1), last];
}

/** Split `text` into parts of at most `max` by `measure` (UTF-16 code units by default). */
export function splitMessage(text: string, max: number, measure: Measure = UNITS): string[] {
  return splitHead(text, max, measure, Number.POSITIVE_INFINITY).parts;
}

/** The first `limit` parts of `text` (none blank), and what is left after them. */
function splitHead(
  text: string,
  max: number,
  measure: Measure,
  limit: number,
): { parts: string[]; rest: string } {
  if (max < 16) throw new Error('max part length is too small');
  const parts: string[] = [];
  let rest = text;
  let reopen = '';
  while (rest.length > 0 && parts.length < limit) {
    // A measure never counts less than the units (escapes only add): only a rest within the
    // units is measured whole, not a megabyte once per part.
    if (reopen.length + rest.length <= max && measure(reopen + rest) <= max) {
      if ((reopen + rest).trim().length > 0) parts.push(reopen + rest);
      rest = '';
      break;
    }
    // White space outside a fence makes only blank parts, which are not sent: skipped in one
    // step, unmeasured (measured part by part, a megabyte of it cost what the reply's text did).
    if (reopen === '') {
      const blank = LEADING_SPACE.exec(rest)?.[0].length ?? 0;
      if (blank > 0 && blank >= Math.min(rest.length, max)) {
        rest = rest.slice(blank);
        continue;
      }
    }
    // Leave room to close a fence that is open at the cut.
    let budget = Math.min(rest.length, max - reopen.length - (FENCE.length + 1));
    let next = cutAt(rest, reopen, budget);
    // Shrunk until the product's count fits too; each round cuts by the overshoot's share.
    while (budget > 1 && measure(next.part) > max) {
      budget = Math.max(1, Math.floor((budget * max) / measure(next.part)) - 1);
      next = cutAt(rest, reopen, budget);
    }
    if (next.part.trim().length > 0) parts.push(next.part);
    rest = rest.slice(next.cut).replace(/^\n+/, '');
    reopen = next.open ? `${FENCE}\n` : '';
  }
  return { parts, rest };
}

/** The part cut from `rest` within `budget` units, its fence closed if the cut leaves it open. */
function cutAt(rest: string, reopen: string, budget: number) {
  const cut = Math.max(1, findCut(rest, budget));
  let part = rest.slice(0, cut);
  const open = isFenceOpen(reopen + part);
  if (open) part = `${part.replace(/\n?$/, '\n')}${FENCE}`;
  return { part: reopen + part, cut, open };
}

function findCut(text: string, budget: number): number {
  const window = text.slice(0, budget + 1);
  for (const separator of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(separator);
    if (at > budget / 2) return at + (separator === ' ' ? 1 : 0);
  }
  // No boundary in reach: cut hard, but not between the halves of a surrogate pair, nor right
  // before an `@`: inside a word it is no mention (the product's escapes left it as it is), but
  // at the start of the next part `@channel` would page everyone.
  let cut = budget;
  if (text.charCodeAt(cut) === 0x40 && cut > 1) cut -= 1;
  const code = text.charCodeAt(cut - 1);
  return code >= 0xd800 && code <= 0xdbff ? cut - 1 : cut;
}

function isFenceOpen(text: string): boolean {
  return (text.split(FENCE).length - 1) % 2 === 1;
}
