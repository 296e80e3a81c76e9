/**
 * Splitting a long reply into parts a product accepts: at paragraph, then
 * line, then word boundaries; never inside a surrogate pair; an open code
 * fence is closed at the end of a part and reopened in the next.
 */
import { headUnits } from '../text-cut.ts';

const FENCE = '```';

/**
 * Most parts one reply is sent in. A runner's reply may be up to runtime.maxReplyBytes (1 MiB):
 * unbounded, that is hundreds of API calls to one chat for one request. The rest of the reply
 * stays in the store (`hookgate runs`).
 */
export const MAX_PARTS = 20;

/** The parts to send: at most `maxParts`, the last one ending with a note of what was left out. */
export function capParts(parts: readonly string[], max: number, maxParts = MAX_PARTS): string[] {
  if (parts.length <= maxParts) return [...parts];
  const note = `\n\n[reply cut: ${parts.length - maxParts + 1} more parts not sent; the whole reply is in hookgate runs]`;
  const kept = parts.slice(0, maxParts - 1);
  kept.push(headUnits(parts[maxParts - 1] as string, Math.max(0, max - note.length)) + note);
  return kept;
}

/** Split `text` into parts of at most `max` UTF-16 code units. */
export function splitMessage(text: string, max: number): string[] {
  if (max < 16) throw new Error('max part length is too small');
  const parts: string[] = [];
  let rest = text;
  let reopen = '';
  while (rest.length > 0) {
    const budget = max - reopen.length;
    if (rest.length <= budget) {
      parts.push(reopen + rest);
      break;
    }
    // Leave room to close a fence that is open at the cut.
    let cut = findCut(rest, budget - (FENCE.length + 1));
    let part = rest.slice(0, cut);
    const open = isFenceOpen(reopen + part);
    if (open) part = `${part.replace(/\n?$/, '\n')}${FENCE}`;
    parts.push(reopen + part);
    rest = rest.slice(cut).replace(/^\n+/, '');
    reopen = open ? `${FENCE}\n` : '';
    cut = 0;
  }
  return parts.filter((part) => part.trim().length > 0);
}

function findCut(text: string, budget: number): number {
  const window = text.slice(0, budget + 1);
  for (const separator of ['\n\n', '\n', ' ']) {
    const at = window.lastIndexOf(separator);
    if (at > budget / 2) return at + (separator === ' ' ? 1 : 0);
  }
  // No boundary in reach: cut hard, but not between the halves of a surrogate pair.
  const code = text.charCodeAt(budget - 1);
  return code >= 0xd800 && code <= 0xdbff ? budget - 1 : budget;
}

function isFenceOpen(text: string): boolean {
  return (text.split(FENCE).length - 1) % 2 === 1;
}
