/**
 * What every channel refuses in a recipient, before its own form: text that
 * cannot be written as UTF-8 (a lone surrogate, which JSON carries and URL
 * encoding throws on) and control characters (no product's id holds one;
 * they would reach URLs, request bodies and the operator's terminal).
 * Pure.
 */

// No product's recipient id holds one of these.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding controls is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why `to` is no recipient on any channel, or null. Whitespace around it (a line break a
 * folded YAML template renders) is left to the channel, which trims it as it always has.
 */
export function recipientFormProblem(to: string): string | null {
  if (!to.isWellFormed()) return 'holds a lone surrogate (not valid UTF-16 text)';
  if (CONTROL.test(to.trim())) return 'holds a control character';
  return null;
}
