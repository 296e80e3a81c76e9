/**
 * Marker neutralisation: anything in untrusted content whose skeleton is a
 * wrapper marker word or a run of three `<`/`>` brackets is replaced, in the
 * original text, by NEUTRALISED. Matching runs on the marker view of the
 * skeleton (separators, invisibles and marks already gone), so the patterns
 * are plain literals and the search is linear.
 */
import { foldAscii, type Skeleton, skeleton } from './skeleton.ts';

/** Text that replaces anything in the content resembling a marker or its brackets. */
export const NEUTRALISED = '[marker removed]';

/** The marker view of a word, as the skeleton spells it. */
function skeletonWord(word: string): string {
  return [...word.replace(/[^A-Za-z]/g, '')].map(foldAscii).join('');
}

// Brackets of either marker, and the marker words (the end marker's END included when present).
const MARKER_SOURCE = `<<<|>>>|(?:${skeletonWord('END')})?${skeletonWord('EXTERNAL_UNTRUSTED_CONTENT')}`;
const MARKER_LIKE = new RegExp(MARKER_SOURCE, 'g');
// Non-global twin for the cheap first look (no lastIndex state shared with matchAll).
const ANY_MARKER_LIKE = new RegExp(MARKER_SOURCE);

/** Spans of the content (start, end offsets) to replace, merged when they touch. */
function markerSpans(content: string, sk: Skeleton): Array<[number, number]> {
  const starts = sk.starts as Int32Array;
  const spans: Array<[number, number]> = [];
  for (const match of sk.marker.matchAll(MARKER_LIKE)) {
    const start = starts[match.index] as number;
    const lastAt = starts[match.index + match[0].length - 1] as number;
    const end = lastAt + ((content.codePointAt(lastAt) as number) > 0xffff ? 2 : 1);
    const last = spans.at(-1);
    if (last && start <= last[1]) last[1] = Math.max(last[1], end);
    else spans.push([start, end]);
  }
  return spans;
}

/** Replace marker-like text (in any disguise) with a neutral placeholder; the rest stays as sent. */
export function neutraliseMarkers(
  content: string,
  sk: Skeleton = skeleton(content),
): { text: string; count: number } {
  if (!ANY_MARKER_LIKE.test(sk.marker)) return { text: content, count: 0 };
  const spans = markerSpans(content, sk.starts ? sk : skeleton(content, true));
  let text = '';
  let at = 0;
  for (const [start, end] of spans) {
    text += content.slice(at, start) + NEUTRALISED;
    at = end;
  }
  return { text: text + content.slice(at), count: spans.length };
}
