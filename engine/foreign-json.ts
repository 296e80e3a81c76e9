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

/**
 * Whether a key, at any depth, ends in a backslash, written `\\` or `\u005c`: a closing
 * quote (one not escaped) right after such an escape, followed by a colon. One pass per way of
 * writing it: the searches are native, and each run of backslashes is counted once.
 */
export function keyEndsInBackslash(text: string): boolean {
  return endsKey(text, '\\\\"', 0) || endsKey(text, '005c"', 1) || endsKey(text, '005C"', 1);
}

/**
 * Whether `ending` (a backslash written one way, then the quote) closes a key somewhere. The
 * backslash run that ends at the escape's own backslash decides whether it is an escape: an
 * even run for `\\` (pairs), an odd one for `\u005c` (its backslash starts the escape).
 */
function endsKey(text: string, ending: string, parity: 0 | 1): boolean {
  for (let at = text.indexOf(ending); at >= 0; at = text.indexOf(ending, at + ending.length)) {
    const quote = at + ending.length - 1;
    // `\\"`: the backslashes right before the quote; `\u005c"`: those ending before the `u`.
    let end = quote - 1;
    if (parity === 1) {
      if (text[at - 1] !== 'u') continue;
      end = at - 2;
    }
    let run = 0;
    while (end - run >= 0 && text[end - run] === '\\') run++;
    if (run === 0 || run % 2 !== parity) continue;
    let next = quote + 1;
    while (next < text.length && JSON_SPACE.has(text[next] as string)) next++;
    if (text[next] === ':') return true;
  }
  return false;
}

const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);
