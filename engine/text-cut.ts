/**
 * Cuts of JavaScript strings by UTF-16 units (what lengths and limits of
 * text count here) that never leave half a surrogate pair: an emoji cut in
 * two is no text, and a lone surrogate is refused by strict JSON readers.
 * Pure.
 */

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** At most the first `max` units of `text`, ending on a whole character. */
export function headUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = Math.max(0, max);
  return isHigh(text.charCodeAt(end - 1)) ? text.slice(0, end - 1) : text.slice(0, end);
}

/** `text` whole, or its first `max` units (whole characters) followed by `…`. */
export function clipUnits(text: string, max: number): string {
  return text.length > max ? `${headUnits(text, max)}…` : text;
}

/** At most the last `max` units of `text`, starting on a whole character. */
export function tailUnits(text: string, max: number): string {
  if (text.length <= max) return text;
  const start = text.length - Math.max(0, max);
  return isLow(text.charCodeAt(start)) ? text.slice(start + 1) : text.slice(start);
}
