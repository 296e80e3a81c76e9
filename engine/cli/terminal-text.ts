/**
 * Text from requests on an operator's terminal: wake texts, hook names,
 * reasons and replies can carry escape sequences (set the title, write the
 * clipboard through OSC 52, clear the screen) or bidi controls that make a
 * line read differently from what it holds. Every CLI view sends its lines
 * through here. Pure.
 */

// C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), the Arabic letter mark, the
// left-to-right/right-to-left marks, line and paragraph separators, bidi embeddings and
// overrides (U+202A-202E) and isolates (U+2066-2069).
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching controls is the point.
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (char: string, width: number) =>
  (char.codePointAt(0) as number).toString(16).padStart(width, '0');

/** A line safe to print: each control shown as `\xHH` (up to U+00FF) or `\uHHHH`. */
export function terminalText(line: string): string {
  return line.replace(UNSAFE, (char) =>
    char.charCodeAt(0) <= 0xff ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`,
  );
}

/**
 * A JSON text safe to print: the same characters as `\uHHHH` escapes. They can only occur
 * inside strings, so the line parses to exactly the same value.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE, (char) => `\\u${hex(char, 4)}`);
}

/** One JSON line for `--json` views: parses to `value`, prints no control character. */
export function jsonLine(value: unknown): string {
  return terminalJson(JSON.stringify(value));
}
