/**
 * JSON.parse for text from outside the process (request bodies, what a transform process sends
 * back, runner and provider answers, pushes, key sets): the same, but a key ending in a
 * backslash is refused before the text is parsed. Node 24's JSON.parse (V8; reproduced on
 * 24.21.0, not on Node 20) reuses the keys of objects it built before, by the keys in front of
 * them: once it parsed `{"a":1,"\\":1}`, a later `{"a":1,"\u0041":1}` comes back with the key
 * `\`, not `A`, so one source's text could rename the keys of another's. Refused before any
 * parse, the parser never holds such a key. Pure.
 */

/** A key ending in a backslash (a SyntaxError: callers treat it as text that is not JSON). */
export class BackslashKeyError extends SyntaxError {
  constructor() {
    super('a JSON key ends in a backslash');
    this.name = 'BackslashKeyError';
  }
}

/** JSON.parse, refusing a key ending in a backslash (BackslashKeyError) before parsing. */
export function parseForeignJson(text: string): unknown {
  if (keyEndsInBackslash(text)) throw new BackslashKeyError();
  return JSON.parse(text);
}

// An escaped backslash right before a quote: only text holding one can hold such a key.
const BACKSLASH_QUOTE = '\\\\"';
const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * Whether a key, at any depth, ends in a backslash: a quote after an even number of
 * backslashes (an escaped backslash, then the string's end) followed by a colon. One pass: the
 * search is native, and each run of backslashes is counted once.
 */
export function keyEndsInBackslash(text: string): boolean {
  for (
    let at = text.indexOf(BACKSLASH_QUOTE);
    at >= 0;
    at = text.indexOf(BACKSLASH_QUOTE, at + 3)
  ) {
    const quote = at + 2;
    let run = 0;
    while (quote - run - 1 >= 0 && text[quote - run - 1] === '\\') run++;
    if (run % 2 !== 0) continue;
    let next = quote + 1;
    while (next < text.length && JSON_SPACE.has(text[next] as string)) next++;
    if (text[next] === ':') return true;
  }
  return false;
}
