/**
 * An unexpected error as a log line may carry it: its kind and message, with what a message
 * can quote that is secret blanked (a URL's user info and query, a bearer token), on one line
 * and cut. A store's "no room left" or "database is locked" is what an operator needs to see;
 * a fetch's message may name the URL it was given, credentials and all. Pure.
 */

const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;
const URL_QUERY = /(\b[a-z][a-z0-9+.-]*:\/\/[^\s?#]*)\?[^\s#]*/gi;
const BEARER = /\b(bearer|token|bot)(\s*[:=]?\s*)[A-Za-z0-9._~+/:-]{8,}/gi;
const MAX_CHARS = 300;

export function errorText(err: unknown): string {
  const kind = err instanceof Error ? err.name : typeof err;
  const message = err instanceof Error ? err.message : '';
  const blanked = message
    .replace(URL_CREDENTIALS, '$1***@')
    .replace(URL_QUERY, '$1?***')
    .replace(BEARER, '$1$2***')
    .replace(/\s+/g, ' ')
    .slice(0, MAX_CHARS);
  return blanked ? `${kind}: ${blanked}` : kind;
}
