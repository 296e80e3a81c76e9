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

const TAG = /[\u{e0020}-\u{e007e}]/u;

/**
 * The skeleton of the content with its tag characters read as the ASCII they encode (models read
 * them so, though they are invisible), or null when it has none. Each tag stays two code units
 * long (its letter and an invisible ZWSP), so offsets in that reading are offsets in the content.
 */
export function tagReading(content: string): Skeleton | null {
  if (!TAG.test(content)) return null;
  const units = new Uint16Array(content.length);
  for (let i = 0; i < content.length; i++) {
    const unit = content.charCodeAt(i);
    const next = content.charCodeAt(i + 1);
    // U+E0020..U+E007E is the surrogate pair DB40 DC20..DC7E.
    if (unit === 0xdb40 && next >= 0xdc20 && next <= 0xdc7e) {
      units[i++] = next - 0xdc00;
      units[i] = 0x200b;
    } else units[i] = unit;
  }
  return skeleton(Buffer.from(units.buffer).toString('utf16le'));
}

/** Spans of both readings (tags ignored, tags decoded), in order and merged. */
function allSpans(content: string, sk: Skeleton, decoded: Skeleton | null): number[] {
  const first = anyMarkerLike(sk) ? markerSpans(content, sk) : [];
  if (decoded === null || !anyMarkerLike(decoded)) return first;
  const both = [...first, ...markerSpans(content, decoded)];
  const pairs: Array<[number, number]> = [];
  for (let i = 0; i < both.length; i += 2) pairs.push([both[i] as number, both[i + 1] as number]);
  pairs.sort((a, b) => a[0] - b[0]);
  const spans: number[] = [];
  for (const [start, end] of pairs) addSpan(spans, start, end);
  return spans;
}

/** Replace marker-like text (in any disguise) with a neutral placeholder; the rest stays as sent. */
export function neutraliseMarkers(
  content: string,
  sk: Skeleton = skeleton(content),
  tags: Skeleton | null = tagReading(content),
): { text: string; count: number } {
  const spans = allSpans(content, sk, tags);
  if (spans.length === 0) return { text: content, count: 0 };
  let text = '';
  let at = 0;
  for (let i = 0; i < spans.length; i += 2) {
    text += content.slice(at, spans[i]) + NEUTRALISED;
    at = spans[i + 1] as number;
  }
  return { text: text + content.slice(at), count: spans.length / 2 };
}
