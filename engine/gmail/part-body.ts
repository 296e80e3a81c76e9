/**
 * Decoding one Gmail message part's body: `body.data` is base64url, its bytes are text in the
 * charset of the part's Content-Type. Work is bounded by what the caller will keep, never by
 * the size of the input: only the prefix of `data` that can matter is validated and decoded,
 * so a 50 MB data string costs the same as a short one.
 */
import { endianness } from 'node:os';
import { TextDecoder } from 'node:util';

/** Decoded text of a part, and whether bytes of the source were left out. */
export type DecodedPart = { text: string; sourceCut: boolean };

const BASE64URL_BODY = /^[A-Za-z0-9_-]*$/;
const BASE64URL_FULL = /^[A-Za-z0-9_-]*={0,2}$/;

/**
 * Strict base64url (no `+`, `/`, whitespace) of at most `maxBytes` decoded bytes; padding is
 * optional. Returns null for anything outside the alphabet or of an impossible length.
 */
export function decodeBase64UrlPrefix(
  data: string,
  maxBytes: number,
): { bytes: Buffer; cut: boolean } | null {
  // Whole quanta of four characters, so a prefix never ends inside a group.
  const prefixChars = Math.ceil(maxBytes / 3) * 4;
  if (data.length > prefixChars) {
    const prefix = data.slice(0, prefixChars);
    if (!BASE64URL_BODY.test(prefix)) return null;
    return { bytes: Buffer.from(prefix, 'base64url').subarray(0, maxBytes), cut: true };
  }
  if (!BASE64URL_FULL.test(data)) return null;
  const unpadded = data.replace(/={1,2}$/, '');
  if (unpadded.length % 4 === 1) return null;
  if (data.length !== unpadded.length && data.length % 4 !== 0) return null;
  const bytes = Buffer.from(unpadded, 'base64url');
  return { bytes: bytes.subarray(0, maxBytes), cut: bytes.length > maxBytes };
}

/** The `charset` parameter of a Content-Type value, lower-cased; null when absent or odd. */
export function charsetOf(contentType: string | undefined): string | null {
  if (contentType === undefined) return null;
  const match = /;\s*charset\s*=\s*(?:"([^"]{1,64})"|([^\s;"]{1,64}))/i.exec(
    contentType.slice(0, 1024),
  );
  const value = match?.[1] ?? match?.[2];
  return value ? value.trim().toLowerCase() : null;
}

/** A decoder for a charset label; unknown or refused labels fall back to UTF-8 with replacement. */
export function decoderFor(charset: string | null): TextDecoder {
  if (charset !== null) {
    try {
      // Throws RangeError for unknown labels and for the "replacement" encodings (iso-2022-kr ...).
      return new TextDecoder(charset, { fatal: false, ignoreBOM: false });
    } catch {
      // Unknown label: the text is most likely ASCII-compatible; UTF-8 keeps what it can.
    }
  }
  return new TextDecoder('utf-8', { fatal: false });
}

/**
 * Decode a part's `data` to text: at most `maxSourceBytes` bytes of it, in `charset`.
 * Null when `data` is not valid base64url.
 */
export function decodePartText(
  data: string,
  charset: string | null,
  maxSourceBytes: number,
): DecodedPart | null {
  const decoded = decodeBase64UrlPrefix(data, maxSourceBytes);
  if (decoded === null) return null;
  // stream: true when cut, so a multi-byte character split by the cut is held back, not
  // turned into U+FFFD at the end of the text.
  const text = decoderFor(charset).decode(decoded.bytes, { stream: decoded.cut });
  return { text, sourceCut: decoded.cut };
}

// A Uint16Array holds its units in the host's byte order: read them back in that order.
const UTF16 = new TextDecoder(endianness() === 'LE' ? 'utf-16le' : 'utf-16be');

/**
 * CRLF and lone CR to LF. One pass over the text's code units, whatever it holds: a regular
 * expression or a split makes a string per line break, and a part of nothing but line breaks
 * made that cost tens of milliseconds per megabyte.
 */
export function toLf(text: string): string {
  if (!text.includes('\r')) return text;
  const units = new Uint16Array(text.length);
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit !== 13) units[length++] = unit;
    else {
      units[length++] = 10;
      if (text.charCodeAt(i + 1) === 10) i++;
    }
  }
  // The units came from a string TextDecoder made: no lone surrogates to be replaced.
  return UTF16.decode(units.subarray(0, length));
}
