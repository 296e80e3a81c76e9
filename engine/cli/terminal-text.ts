/**
 * Text from requests on an operator's terminal: wake texts, hook names,
 * reasons and replies can carry escape sequences (set the title, write the
 * clipboard through OSC 52, clear the screen) or bidi controls that make a
 * line read differently from what it holds. Every CLI view sends its lines
 * through here. Pure.
 */

// C0 controls, DEL, C1 controls (0x9b is a one-byte CSI), line and paragraph separators, and
// every invisible character: Unicode's default-ignorables and format characters (zero-width
// characters and marks, the Arabic letter mark, bidi embeddings, overrides and isolates, soft
// hyphen, variation selectors, Hangul fillers, and the tag characters U+E0000-E007F, invisible
// yet read as letters by a model), as the console shows them.
const UNSAFE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching controls is the point.
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\p{Default_Ignorable_Code_Point}\p{Cf}]/gu;

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
