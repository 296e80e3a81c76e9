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
/** The patterns built above, as run over untrusted text (held to linear time by regex-linear.test.ts). */
export const MARKER_PATTERNS: readonly RegExp[] = [
  MARKER_LIKE,
  ANY_MARKER_LIKE,
  ASCII_MARKER_LIKE,
  ANY_ASCII_MARKER_LIKE,
];

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

/** The content span of a match of `length` characters at `index` of a marker view. */
function spanAt(
  content: string,
  starts: Int32Array,
  index: number,
  length: number,
): [number, number] {
  const lastAt = starts[index + length - 1] as number;
  const end = lastAt + ((content.codePointAt(lastAt) as number) > 0xffff ? 2 : 1);
  return [starts[index] as number, end];
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
  for (const match of sk.marker.matchAll(MARKER_LIKE)) {
    const [start, end] = spanAt(content, sk.starts, match.index, match[0].length);
    addSpan(spans, start, end);
  }
  return spans;
}

// The longest marker-like match (END and the marker word): a match holding a character read from
// a tag lies within this many characters of it.
const REACH = 3 + 'EXTERNALUNTRUSTEDCONTENT'.length;

/** Whether the content holds a tag character (U+E0020..U+E007E, surrogates DB40 DC20..DC7E) at `at`. */
function isTagAt(content: string, at: number): boolean {
  const low = content.charCodeAt(at + 1);
  return content.charCodeAt(at) === 0xdb40 && low >= 0xdc20 && low <= 0xdc7e;
}

/**
 * Spans found when tags are read as letters: searched in windows around the characters read
 * from tags (the rest is the plain reading, already searched), so a few tags in a long text
 * cost a few short searches.
 */
function taggedSpans(content: string, tagged: Skeleton): number[] {
  const spans: number[] = [];
  const view = tagged.marker as string;
  const starts = tagged.starts as Int32Array;
  for (let k = 0; k < view.length; k++) {
    if (!isTagAt(content, starts[k] as number)) continue;
    // Tags closer than two reaches share a window: windows never overlap.
    let last = k;
    for (let j = k + 1; j < view.length && j <= last + 2 * REACH; j++) {
      if (isTagAt(content, starts[j] as number)) last = j;
    }
    const from = Math.max(0, k - REACH);
    const to = Math.min(view.length, last + REACH + 1);
    for (const match of view.slice(from, to).matchAll(MARKER_LIKE)) {
      const [start, end] = spanAt(content, starts, from + match.index, match[0].length);
      addSpan(spans, start, end);
    }
    k = last + 2 * REACH;
  }
  return spans;
}

/**
 * Two span lists as one (merged where they touch or overlap), by counting the spans open at each
 * offset: linear in the content, whatever the number of spans.
 */
function mergeSpans(a: number[], b: number[], length: number): number[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const open = new Int32Array(length + 1);
  for (const list of [a, b]) {
    for (let i = 0; i < list.length; i += 2) {
      const start = list[i] as number;
      const end = list[i + 1] as number;
      open[start] = (open[start] as number) + 1;
      open[end] = (open[end] as number) - 1;
    }
  }
  const spans: number[] = [];
  let depth = 0;
  for (let at = 0; at <= length; at++) {
    const change = open[at] as number;
    if (change === 0) continue;
    if (depth === 0) spans.push(at);
    depth += change;
    if (depth === 0) spans.push(at);
  }
  return spans;
}

/** Replace marker-like text (in any disguise) with a neutral placeholder; the rest stays as sent. */
export function neutraliseMarkers(
  content: string,
  sk: Skeleton = skeleton(content),
): { text: string; count: number } {
  const plainSpans = anyMarkerLike(sk) ? markerSpans(content, sk) : [];
  const spans = sk.tagged
    ? mergeSpans(plainSpans, taggedSpans(content, sk.tagged), content.length)
    : plainSpans;
  if (spans.length === 0) return { text: content, count: 0 };
  let text = '';
  let at = 0;
  for (let i = 0; i < spans.length; i += 2) {
    text += content.slice(at, spans[i]) + NEUTRALISED;
    at = spans[i + 1] as number;
  }
  return { text: text + content.slice(at), count: spans.length / 2 };
}
