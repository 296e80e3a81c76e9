/**
 * Turning any text into one session-key segment (`A-Za-z0-9._@+-` only),
 * injectively: two different inputs never give the same segment, so two
 * senders cannot be merged into one session by choosing look-alike names.
 * Readable for the common case: `owner/repo` becomes `owner@repo`.
 *
 * Encoding: letters, digits, `.`, `_` and `-` stay; `/` becomes `@`; every
 * other UTF-16 code unit (`@` and `+` included) becomes `+XX` (two upper-case
 * hex digits) when below 0x100, else `+uXXXX`. Decoding is unambiguous: `+`
 * always opens an escape, `u` after it means four digits, and `@` only ever
 * stands for `/`.
 */

// Characters that stand for themselves.
const PLAIN = /^[A-Za-z0-9._-]$/;

/** True for a code unit that stands for itself (PLAIN, without a regex or a string per unit). */
function isPlain(code: number): boolean {
  return (
    (code >= 0x61 && code <= 0x7a) || // a-z
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x30 && code <= 0x39) || // 0-9
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x2d // -
  );
}

/** The segment for a string (empty for an empty string). */
export function keySegment(text: string): string {
  let out = '';
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (isPlain(code)) continue;
    // Runs of plain characters are copied as one slice.
    if (run < i) out += text.slice(run, i);
    out += code === 0x2f ? '@' : escapeUnit(code);
    run = i + 1;
  }
  return run === 0 ? text : out + text.slice(run);
}

function escapeUnit(code: number): string {
  const hex = code.toString(16).toUpperCase();
  return code < 0x100 ? `+${hex.padStart(2, '0')}` : `+u${hex.padStart(4, '0')}`;
}

/** The inverse of keySegment (for tests and for operators reading keys back); null when malformed. */
export function decodeKeySegment(segment: string): string | null {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const char = segment[i] as string;
    if (char === '@') out += '/';
    else if (char !== '+') {
      if (!PLAIN.test(char)) return null;
      out += char;
    } else {
      const wide = segment[i + 1] === 'u';
      const digits = segment.slice(i + (wide ? 2 : 1), i + (wide ? 6 : 3));
      if (!/^[0-9A-F]+$/.test(digits) || digits.length !== (wide ? 4 : 2)) return null;
      out += String.fromCharCode(Number.parseInt(digits, 16));
      i += wide ? 5 : 2;
    }
  }
  return out;
}
