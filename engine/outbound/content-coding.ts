/**
 * The content-coding of an outside answer. hookgate never decodes one (a gzip bomb costs only
 * its compressed bytes) and asks for `identity` on every call; an answer compressed anyway is
 * named by its coding rather than read as text. Pure.
 */

/** What every outbound call asks for: the answer as it is, never compressed. */
export const ACCEPT_IDENTITY = 'identity';

// A coding token as registries name them (`gzip`, `br`, `x-gzip`, `zstd`), a few in a list.
const CODINGS = /^[a-z0-9][a-z0-9._+-]{0,31}(?:\s*,\s*[a-z0-9][a-z0-9._+-]{0,31}){0,3}$/;

/**
 * The answer's coding as a reason may name it (`gzip`, `gzip, br`), `unnamed` for a value of
 * another shape, or undefined when the body is as sent (no coding, or `identity`).
 */
export function answerCoding(value: string | string[] | undefined): string | undefined {
  const text = (Array.isArray(value) ? value.join(', ') : (value ?? '')).trim().toLowerCase();
  const codings = text.split(',').map((coding) => coding.trim());
  if (codings.every((coding) => coding === '' || coding === 'identity')) return undefined;
  return CODINGS.test(text) ? codings.join(', ') : 'unnamed';
}
