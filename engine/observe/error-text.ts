/**
 * An unexpected error as a log line may carry it: its kind and message, with what a message
 * can quote that is secret blanked (a URL's user info and query, a value after "bearer",
 * "token" or "key"), on one line and cut. A store's "no room left" or "database is locked" is
 * what an operator needs to see; a fetch's message may name the URL it was given, credentials
 * and all. Word by word, no pattern that could backtrack. Pure.
 */

const MAX_CHARS = 300;
// Words after which (or before `=`/`:` in one word) the value is taken for a secret.
const SECRET_NAMES = new Set(['bearer', 'token', 'bot', 'key', 'secret', 'password', 'apikey']);

export function errorText(err: unknown): string {
  const kind = err instanceof Error ? err.name : typeof err;
  const message = err instanceof Error ? err.message.slice(0, MAX_CHARS * 4) : '';
  const words = message.split(/\s+/).filter((word) => word !== '');
  let afterName = false;
  const out = words.map((word) => {
    const blanked = afterName ? '***' : blankWord(word);
    afterName = SECRET_NAMES.has(word.toLowerCase().replace(/[^a-z]/g, ''));
    return blanked;
  });
  const text = out.join(' ').slice(0, MAX_CHARS);
  return text ? `${kind}: ${text}` : kind;
}

function blankWord(word: string): string {
  const scheme = word.indexOf('://');
  if (scheme > 0) return blankUrl(word, scheme);
  const separator = Math.max(word.indexOf('='), word.indexOf(':'));
  if (separator > 0) {
    const name = word
      .slice(0, separator)
      .toLowerCase()
      .replace(/[^a-z]/g, '');
    if (SECRET_NAMES.has(name)) return `${word.slice(0, separator + 1)}***`;
  }
  return word;
}

/** A URL in a word: its user info and query blanked, what is around it kept. */
function blankUrl(word: string, scheme: number): string {
  const start = scheme + 3;
  const end = firstOf(word, start, ['/', '?', '#', ')', ',', '"', "'"]);
  const authority = word.slice(start, end);
  const at = authority.lastIndexOf('@');
  let rest = word.slice(end);
  const query = rest.indexOf('?');
  if (query >= 0) {
    const stop = firstOf(rest, query + 1, ['#', ')', ',', '"', "'"]);
    rest = `${rest.slice(0, query)}?***${rest.slice(stop)}`;
  }
  const host = at >= 0 ? `***@${authority.slice(at + 1)}` : authority;
  return `${word.slice(0, start)}${host}${rest}`;
}

function firstOf(text: string, from: number, stops: readonly string[]): number {
  let first = text.length;
  for (const stop of stops) {
    const found = text.indexOf(stop, from);
    if (found >= 0 && found < first) first = found;
  }
  return first;
}
