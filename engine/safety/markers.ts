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
// what the view would drop allowed between characters (same matches, same extent).
const ASCII_SOURCE = markerSource('[^A-Z0-9<>|]*');
const ASCII_MARKER_LIKE = new RegExp(ASCII_SOURCE, 'g');
const ANY_ASCII_MARKER_LIKE = new RegExp(ASCII_SOURCE);

/** Whether the content holds anything marker-like. */
function anyMarkerLike(sk: Skeleton): boolean {
  if (sk.marker === null) return ANY_ASCII_MARKER_LIKE.test(sk.injection);
  return ANY_MARKER_LIKE.test(sk.marker);
}

/** Add a span to `spans` (flat start, end pairs), merged with the last one when they touch. */
function addSpan(spans: number[], start: number, end: number): void {
  const last = spans.length - 1;
  if (last > 0 && start <= (spans[last] as number))
    spans[last] = Math.max(spans[last] as number, end);
  else spans.push(start, end);
}

/** Spans of the content to replace. */
function markerSpans(content: string, sk: Skeleton): number[] {
  const spans: number[] = [];
  if (sk.marker === null || sk.starts === null) {
    for (const match of content.toUpperCase().matchAll(ASCII_MARKER_LIKE)) {
      addSpan(spans, match.index, match.index + match[0].length);
    }
    return spans;
  }
  const starts = sk.starts;
  for (const match of sk.marker.matchAll(MARKER_LIKE)) {
    const lastAt = starts[match.index + match[0].length - 1] as number;
    const end = lastAt + ((content.codePointAt(lastAt) as number) > 0xffff ? 2 : 1);
    addSpan(spans, starts[match.index] as number, end);
  }
  return spans;
}

/** Replace marker-like text (in any disguise) with a neutral placeholder; the rest stays as sent. */
export function neutraliseMarkers(
  content: string,
  sk: Skeleton = skeleton(content),
): { text: string; count: number } {
  if (!anyMarkerLike(sk)) return { text: content, count: 0 };
  const spans = markerSpans(content, sk);
  let text = '';
  let at = 0;
  for (let i = 0; i < spans.length; i += 2) {
    text += content.slice(at, spans[i]) + NEUTRALISED;
    at = spans[i + 1] as number;
  }
  return { text: text + content.slice(at), count: spans.length / 2 };
}
