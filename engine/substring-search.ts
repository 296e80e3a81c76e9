/**
 * Substring search in time linear in both texts, for needles that come from
 * request data. V8's own search is fast on average but quadratic on some
 * inputs: 'a'.repeat(30000) + 'b' + 'a'.repeat(30000) inside 200,000 'a's
 * takes over a second. Short needles keep the native search (its worst case
 * is bounded by the needle's length times the text's).
 */

/** Needles up to this length use String.prototype.includes. */
export const NATIVE_NEEDLE_CHARS = 64;

/** True when `text` contains `needle` (Knuth-Morris-Pratt past NATIVE_NEEDLE_CHARS). */
export function containsText(text: string, needle: string): boolean {
  if (needle.length <= NATIVE_NEEDLE_CHARS || needle.length > text.length)
    return text.includes(needle);
  const border = borders(needle);
  let matched = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    while (matched > 0 && needle.charCodeAt(matched) !== c) matched = border[matched - 1] as number;
    if (needle.charCodeAt(matched) === c) matched++;
    if (matched === needle.length) return true;
  }
  return false;
}

/** For each prefix of `needle`, the length of its longest proper border (KMP's failure table). */
function borders(needle: string): Uint32Array {
  const table = new Uint32Array(needle.length);
  let k = 0;
  for (let i = 1; i < needle.length; i++) {
    const c = needle.charCodeAt(i);
    while (k > 0 && needle.charCodeAt(k) !== c) k = table[k - 1] as number;
    if (needle.charCodeAt(k) === c) k++;
    table[i] = k;
  }
  return table;
}
