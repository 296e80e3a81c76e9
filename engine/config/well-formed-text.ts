/**
 * Text a configuration may hold: no lone UTF-16 surrogate (`"\uD800"` in JSON or a YAML
 * double-quoted string) in any string, value or key. One has no UTF-8 form, so a password, a
 * header, a secret or a prompt holding it cannot be sent as written (encodeURIComponent throws,
 * an encoder writes U+FFFD); no setting needs one. The same test request data gets
 * (String.prototype.isWellFormed). Checked at load, after `${VAR}` substitution. Pure.
 */

import { joinPath } from '../validation.ts';

/** Where a lone surrogate is: a setting's value, or a key (named by the object holding it). */
export type IllFormedText = { path: string; inKey: boolean };

/** The first string of `value` (depth first, keys before their values) that is not well-formed. */
export function findIllFormedText(value: unknown, at = ''): IllFormedText | null {
  return walk(value, at, new WeakSet());
}

function walk(value: unknown, at: string, seen: WeakSet<object>): IllFormedText | null {
  if (typeof value === 'string') return value.isWellFormed() ? null : { path: at, inKey: false };
  if (value === null || typeof value !== 'object') return null;
  // An object met again (a YAML alias's repeat) holds the same strings: walked once.
  if (seen.has(value)) return null;
  seen.add(value);
  for (const [key, item] of Object.entries(value)) {
    // The key is not put in the path: printed, it would carry the surrogate out as U+FFFD.
    if (!key.isWellFormed()) return { path: at, inKey: true };
    const found = walk(item, joinPath(at, key), seen);
    if (found) return found;
  }
  return null;
}

/** What is wrong, in words, never with the text. */
export function illFormedMessage(found: IllFormedText): string {
  const where = found.inKey ? 'a key here holds' : 'holds';
  return `${where} a lone UTF-16 surrogate (half of a pair, such as \\uD800, alone): it has no UTF-8 form and cannot be sent or stored as written`;
}
