/**
 * Marker neutralisation: anything in untrusted content whose skeleton is a
 * wrapper marker word or a run of three `<`/`>` brackets is replaced, in the
 * original text, by NEUTRALISED. Matching runs on the marker view of the
 * skeleton (separators, invisibles and marks already gone), so the patterns
 * are plain literals and the search is linear.
 */
import { lookAlike, type Skeleton, skeleton } from './skeleton.ts';

/** Text that replaces anything in the content resembling a marker or its brackets. */
export const NEUTRALISED = '[marker removed]';

/** A pattern for brackets or a marker word, `between` its characters (letters widened to look-alikes). */
function spelled(word: string, between: string): string {
  return [...word].map(lookAlike).join(between);
}

/** Brackets of either marker, and the marker words (the end marker's END included when present). */
function markerSource(between: string): string {
  const words = `(?:${spelled('END', between)}${between})?${spelled('EXTERNALUNTRUSTEDCONTENT', between)}`;
  return `${spelled('<<<', between)}|${spelled('>>>', between)}|${words}`;
}

// On the marker view, where separators are already gone (a non-global twin for the first look:
// no lastIndex shared with matchAll).
const MARKER_LIKE = new RegExp(markerSource(''), 'g');
const ANY_MARKER_LIKE = new RegExp(markerSource(''));
// Plain ASCII has no marker view (skipped for speed): the same search on its upper case, with
// what the view would drop allowed between characters. Only a first look: a hit builds the view.
const ASCII_MARKER_LIKE = new RegExp(markerSource('[^A-Z0-9<>|]*'));

/** Whether the content may hold anything marker-like (exact: both searches see the same). */
function anyMarkerLike(sk: Skeleton): boolean {
  if (sk.marker === null) return ASCII_MARKER_LIKE.test(sk.injection);
  return ANY_MARKER_LIKE.test(sk.marker);
}

/** Spans of the content (start, end offsets) to replace, merged when they touch. */
function markerSpans(content: string, sk: Skeleton): Array<[number, number]> {
  const starts = sk.starts as Int32Array;
  const spans: Array<[number, number]> = [];
  for (const match of (sk.marker as string).matchAll(MARKER_LIKE)) {
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
  if (!anyMarkerLike(sk)) return { text: content, count: 0 };
  const spans = markerSpans(content, sk.starts ? sk : skeleton(content, true));
  let text = '';
  let at = 0;
  for (const [start, end] of spans) {
    text += content.slice(at, start) + NEUTRALISED;
    at = end;
  }
  return { text: text + content.slice(at), count: spans.length };
}
