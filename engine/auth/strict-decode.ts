/**
 * Strict decoding of signatures and keys. Buffer.from is lenient: hex stops
 * at the first bad pair and base64 skips junk, so "zz" or a truncated digest
 * would decode to fewer bytes. Here the text is checked first and anything
 * but the one canonical spelling of the expected number of bytes is refused.
 */

const LOWER_HEX = /^[0-9a-f]*$/;
const BASE64_PADDED = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64_UNPADDED = /^[A-Za-z0-9+/]*$/;

/** Lower-case hex of exactly `bytes` bytes, or undefined. */
export function decodeHex(text: string, bytes: number): Buffer | undefined {
  if (text.length !== bytes * 2 || !LOWER_HEX.test(text)) return undefined;
  return Buffer.from(text, 'hex');
}

/** Canonical padded base64 of exactly `bytes` bytes, or undefined. */
export function decodeBase64(text: string, bytes: number): Buffer | undefined {
  if (text.length !== Math.ceil(bytes / 3) * 4 || !BASE64_PADDED.test(text)) return undefined;
  const decoded = Buffer.from(text, 'base64');
  // Re-encoding catches padding in the middle and non-zero unused bits (two spellings of one digest).
  if (decoded.length !== bytes || decoded.toString('base64') !== text) return undefined;
  return decoded;
}

/**
 * A base64 key as providers print it (padding optional, as the Standard
 * Webhooks libraries accept): canonical apart from the padding, non-empty.
 */
export function decodeBase64Key(text: string): Buffer | undefined {
  const bare = text.endsWith('==')
    ? text.slice(0, -2)
    : text.endsWith('=')
      ? text.slice(0, -1)
      : text;
  if (bare.length === 0 || bare.length % 4 === 1 || !BASE64_UNPADDED.test(bare)) return undefined;
  const decoded = Buffer.from(bare, 'base64');
  if (decoded.toString('base64').replace(/={1,2}$/, '') !== bare) return undefined;
  // Padding, when given, must be the right amount.
  if (bare !== text && decoded.toString('base64') !== text) return undefined;
  return decoded;
}
