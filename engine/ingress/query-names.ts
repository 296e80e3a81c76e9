/**
 * A query parameter's name as any server in a chain might read it: the
 * hook listener refuses a credential in the query by it, and the console's
 * journal drops credential-like parameters by it. Pure.
 */

// Percent-decoding rounds for a name: a proxy or framework in front may decode once more.
const DECODE_ROUNDS = 3;

/** A query parameter name as any server in the chain might read it. */
export function paramName(raw: string): string {
  let name = raw.replaceAll('+', ' ');
  for (let round = 0; round < DECODE_ROUNDS && name.includes('%'); round++) {
    name = decodeBytes(name);
  }
  // C parsers stop at NUL; `name[]`, `name[a][b]` are the parameter `name` in several frameworks.
  const nul = name.indexOf('\0');
  if (nul >= 0) name = name.slice(0, nul);
  const bracket = name.indexOf('[');
  if (bracket >= 0) name = name.slice(0, bracket);
  // PHP reads `.` and inner blanks in a name as `_` (`access.token` is `access_token` there).
  return name.trim().toLowerCase().replace(/[-. ]/g, '_');
}

/**
 * `+` read as a blank, then up to DECODE_ROUNDS rounds of percent-decoding, with what decodes
 * to `&`, `;` or `=` read as `!` instead: those three in the result are the text's own. Local:
 * a whole query decodes to its parts' decodings, its separators kept and told apart; within a
 * name, `!` and a decoded separator are alike (neither a blank, a letter, `[` nor NUL).
 */
export function decodedQuery(query: string): string {
  let text = query.replaceAll('+', ' ');
  // Until no escape is left: unescape reads a run of bare `%` slowly (14,000 took 0.15 ms).
  for (let round = 0; round < DECODE_ROUNDS && AN_ESCAPE.test(text); round++) {
    text = decodeBytes(text.replace(SEPARATOR_ESCAPE, '%21'));
  }
  return text;
}

const AN_ESCAPE = /%[0-9a-f]{2}/i;

/**
 * `text` and what each round of percent-decoding (up to DECODE_ROUNDS, as decodedQuery reads
 * a query) makes of it, `+` read as a blank first when `plusIsBlank`: every form in which a
 * server in the chain might read it (the URL token check looks at each).
 */
export function percentReadings(text: string, plusIsBlank: boolean): string[] {
  const all = [text];
  let current = plusIsBlank ? text.replaceAll('+', ' ') : text;
  if (current !== text) all.push(current);
  for (let round = 0; round < DECODE_ROUNDS && AN_ESCAPE.test(current); round++) {
    current = decodeBytes(current);
    all.push(current);
  }
  return all;
}
const SEPARATOR_ESCAPE = /%(?:26|3b|3d)/gi;

// `%u` written as `%25u`, so unescape reads only %XX escapes (each one byte, one character).
const WIDE_ESCAPE = /%u/g;

/**
 * Every %XX escape read as the character of that byte code. The native unescape, kept from
 * reading its own %uXXXX form: a replace with a callback per escape cost about 1.7 ms on a
 * 12 KB query of names encoded three times.
 */
function decodeBytes(text: string): string {
  return unescape(text.replace(WIDE_ESCAPE, '%25u'));
}
