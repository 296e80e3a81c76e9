/**
 * Whether a query string carries a credential: a parameter whose name, as any server in a
 * chain might read it (paramName in query-names.ts), is one of the token names. Checked before
 * the request is authenticated, so anyone's request pays for it: the whole query is decoded
 * and matched in a few native passes rather than split and read name by name (3,000 short
 * names cost about 2 ms that way). Pure.
 */
import { decodedQuery } from './query-names.ts';

// Query parameter names (compared case-insensitively, `-` as `_`) that would put a credential in
// URLs and logs.
const TOKEN_PARAMS: readonly string[] = [
  'token',
  'access_token',
  'auth_token',
  'hook_token',
  'x_hookgate_token',
];

// In the decoded, lower-cased query: from a pair's start, blanks (trimmed), a token name with
// `-`, `.`, `_` or a blank between its words, blanks, then where paramName ends the name: NUL,
// `[`, its `=`, the next pair or the end.
const TOKEN_PAIR = new RegExp(
  `(?:^|[&;])\\s*(?:${TOKEN_PARAMS.map((name) => name.replaceAll('_', '[-._ ]')).join('|')})\\s*(?:[\\0[=&;]|$)`,
);

/**
 * True when any query parameter name is a token carrier, in any case or percent-encoding
 * (`&` and `;` both separate parameters, as some servers read them).
 */
export function queryCarriesToken(query: string): boolean {
  return query !== '' && TOKEN_PAIR.test(decodedQuery(query).toLowerCase());
}
