/**
 * JSON.parse for text from outside the process (request bodies, what a transform process sends
 * back, runner and provider answers, pushes, key sets): the same, but a key that holds a
 * backslash is refused before the text is parsed. Node 24's JSON.parse (V8; reproduced on
 * 24.21.0, not on Node 20) reuses the keys of objects it built before, by the keys in front of
 * them, comparing a new key's written characters with an earlier key's text: once it parsed
 * `{"a":1,"\\u":1}` (the key `\u`), a later `{"a":1,"\u0041B":1}` comes back with the key
 * `\u`, not `AB`; any key holding a backslash can stand for an escaped key written after it.
 * One source's text could so rename the keys of another's. Refused before any parse, the
 * parser never holds such a key, and escaped keys read as written. Pure.
 */

/** A key holding a backslash (a SyntaxError: callers treat it as text that is not JSON). */
export class BackslashKeyError extends SyntaxError {
  constructor() {
    super('a JSON key holds a backslash');
    this.name = 'BackslashKeyError';
  }
}

/** JSON.parse, refusing a key that holds a backslash (BackslashKeyError) before parsing. */
export function parseForeignJson(text: string): unknown {
  if (keyHoldsBackslash(text)) throw new BackslashKeyError();
  return JSON.parse(text);
}

// A backslash is written `\\` or `\u005c` (any case): text with neither holds none.
const WRITTEN_BACKSLASH = /\\\\|\\u005c/i;
const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);

/**
 * Whether a key, at any depth, holds a backslash, written either way: one pass over the text's
 * strings, each flagged when it holds one, a flagged string followed by a colon being a key.
 * Text without a written backslash is passed by one native search.
 */
export function keyHoldsBackslash(text: string): boolean {
  if (!WRITTEN_BACKSLASH.test(text)) return false;
  let inString = false;
  let holds = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (!inString) {
      if (c === '"') {
        inString = true;
        holds = false;
      }
      continue;
    }
    if (c === '\\') {
      const next = text[i + 1];
      if (next === '\\') holds = true;
      else if (next === 'u' && text.slice(i + 2, i + 6).toLowerCase() === '005c') holds = true;
      i += next === 'u' ? 5 : 1;
    } else if (c === '"') {
      inString = false;
      if (!holds) continue;
      let after = i + 1;
      while (after < text.length && JSON_SPACE.has(text[after] as string)) after++;
      if (text[after] === ':') return true;
    }
  }
  return false;
}
