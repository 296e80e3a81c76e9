/**
 * UTF-8 sizes and cuts of JavaScript strings: what byte budgets (prompts, mail
 * text, header lines) are counted in. Pure.
 */

/** The UTF-8 size of `text`. */
export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Cut `text` to at most `maxBytes` of UTF-8, on a character boundary. */
export function cutUtf8(text: string, maxBytes: number): { text: string; cut: boolean } {
  // Each UTF-16 unit is at most 3 UTF-8 bytes: short strings need no encoding at all.
  if (text.length * 3 <= maxBytes) return { text, cut: false };
  if (maxBytes <= 0) return { text: '', cut: text !== '' };
  const bytes = Buffer.from(text.slice(0, maxBytes + 1), 'utf8');
  if (bytes.length <= maxBytes && text.length <= maxBytes) return { text, cut: false };
  let end = Math.min(maxBytes, bytes.length);
  // Back off continuation bytes (10xxxxxx) so the cut lands before a character's first byte.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString('utf8'), cut: true };
}

/**
 * True when the UTF-8 of `text` is longer than `maxBytes`. A UTF-16 unit is 1 to 3 bytes
 * (a surrogate pair, two units, is 4; a lone surrogate is written as U+FFFD, 3), so the
 * length alone decides most strings: only one between maxBytes / 3 and maxBytes units is
 * counted.
 */
export function overUtf8Bytes(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true;
  if (text.length * 3 <= maxBytes) return false;
  return byteLength(text) > maxBytes;
}
