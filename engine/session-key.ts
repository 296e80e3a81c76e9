/**
 * Shape and prefix rules for session keys, shared by config checks and policy.
 */

/** Longest session key accepted anywhere. */
export const MAX_SESSION_KEY_LENGTH = 256;

// Printable, no whitespace, control, format or other invisible characters: keys end up in logs
// and file names, and a zero-width space, a bidi override, a variation selector or a Hangul
// filler makes two keys that read the same (or a key that reads as another) two sessions.
const WELL_FORMED = /^[^\s\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]+$/u;

/** True when the key has an acceptable shape (length, no spaces or controls, whole characters). */
export function isWellFormedSessionKey(key: string): boolean {
  // A lone surrogate has no UTF-8 form: the store would hold it as U+FFFD, one session for
  // keys the caller was told apart (and one history for them).
  return (
    key.length > 0 &&
    key.length <= MAX_SESSION_KEY_LENGTH &&
    WELL_FORMED.test(key) &&
    key.isWellFormed()
  );
}

/** True when the key starts with one of the prefixes. */
export function keyHasAllowedPrefix(key: string, prefixes: readonly string[]): boolean {
  return prefixes.some((prefix) => key.startsWith(prefix));
}
