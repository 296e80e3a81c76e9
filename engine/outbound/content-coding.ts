/**
 * The content-coding of an outside answer. hookgate never decodes one (a gzip bomb costs only
 * its compressed bytes) and asks for `identity` on every call; an answer compressed anyway is
 * named by its coding rather than read as text. Pure.
 */
import { codingsOf } from '../coding-list.ts';

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
  const codings = codingsOf(text);
  if (codings.every((coding) => coding === 'identity')) return undefined;
  // A list of the token shape has no empty item: its codings are all of it.
  return CODINGS.test(text) ? codings.join(', ') : 'unnamed';
}
