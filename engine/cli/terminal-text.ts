/**
 * Text from requests on an operator's terminal: wake texts, hook names,
 * reasons and replies can carry escape sequences (set the title, write the
 * clipboard through OSC 52, clear the screen) or bidi controls that make a
 * line read differently from what it holds. Every CLI view sends its lines
 * through here. Pure.
 */

// C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), the Arabic letter mark, zero-width
// characters and marks (U+200B-200F, U+2060-2064, U+FEFF), line and paragraph separators, bidi
// embeddings and overrides (U+202A-202E) and isolates (U+2066-2069); and the tag characters
// (U+E0000-E007F, invisible yet read as letters by a model), matched as their surrogate pair.
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching controls is the point.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;

const hex = (code: number, width: number) => code.toString(16).padStart(width, '0');

/** A line safe to print: each such character shown as `\xHH`, `\uHHHH` or `\u{HHHHH}`. */
export function terminalText(line: string): string {
  return line.replace(UNSAFE, (char) => {
    const code = char.codePointAt(0) as number;
    if (code > 0xffff) return `\\u{${hex(code, 5)}}`;
    return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  });
}

/**
 * A JSON text safe to print: the same characters as `\uHHHH` escapes (a tag character as its
 * escaped surrogate pair). They can only occur inside strings, so the line parses to exactly the
 * same value.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE, (char) =>
    [...Array(char.length).keys()].map((i) => `\\u${hex(char.charCodeAt(i), 4)}`).join(''),
  );
}

/** One JSON line for `--json` views: parses to `value`, prints no control character. */
export function jsonLine(value: unknown): string {
  return terminalJson(JSON.stringify(value));
}
