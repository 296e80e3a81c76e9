/**
 * Strict decoding of base64 in either alphabet. Pub/Sub calls `message.data`
 * standard base64 and Gmail's guide calls it base64url, so both are
 * accepted, with or without padding. Buffer.from is lenient (it skips junk
 * and mixes alphabets), so the text is checked first: one alphabet, padding
 * absent or exactly right, and no unused bits set (no two spellings of the
 * same bytes).
 */

const EITHER_ALPHABET = /^[A-Za-z0-9+/_-]*={0,2}$/;
const STANDARD_ONLY = /[+/]/;
const URL_ONLY = /[-_]/;

/** The bytes of base64 or base64url text, or undefined when it is not strictly either. */
export function decodeBase64Either(text: string): Buffer | undefined {
  if (!EITHER_ALPHABET.test(text)) return undefined;
  const urlSafe = URL_ONLY.test(text);
  if (urlSafe && STANDARD_ONLY.test(text)) return undefined;
  const bare = text.replace(/={1,2}$/, '');
  if (bare.length % 4 === 1) return undefined;
  // Padding, when given, must complete the last group of four.
  if (bare !== text && text.length % 4 !== 0) return undefined;
  const decoded = Buffer.from(bare, 'base64');
  const again = urlSafe
    ? decoded.toString('base64url')
    : decoded.toString('base64').replace(/={1,2}$/, '');
  return again === bare ? decoded : undefined;
}
