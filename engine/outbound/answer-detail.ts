/**
 * What of an outside service's answer (a runner's endpoint or process, a
 * channel or token API) may enter an error reason, and from there the log,
 * the stored outcome, `hookgate runs`, the console and the next heartbeat
 * prompt. The service was handed our credentials, so its answer may echo
 * them: free text goes in only with every credential the call carried
 * blanked and its length capped; a code-shaped field only when it has its
 * code's shape. The one path for both runners and channel adapters.
 */

/** What a credential becomes in a reason. */
export const BLANK = '***';

/** Most characters of an answer's free text kept in a reason: an error message, not a page. */
export const ANSWER_DETAIL_MAX = 200;

/**
 * Values that may or may not be credentials (a command runner's `env`, a
 * URL's query values) are blanked from this length on: shorter ones are
 * flags and ids (`1`, `true`, `v2`) whose blanking would garble every reason,
 * and no real credential is this short. Values configured as credentials
 * (keys, tokens, passwords, runner header values, a URL's user info) are
 * blanked whatever their length.
 */
export const MIN_GUESSED_SECRET_LENGTH = 8;

/** `text` with every secret blanked, in the spellings an answer may echo it in. */
export function blankSecrets(text: string, secrets: readonly string[]): string {
  const forms = new Set<string>();
  for (const secret of secrets) for (const form of spellings(secret)) if (form) forms.add(form);
  // Longest first: a secret that contains another (`Bearer <key>`, `<key>`) is blanked whole.
  let out = text;
  for (const form of [...forms].sort((a, b) => b.length - a.length)) {
    out = out.replaceAll(form, BLANK);
  }
  return out;
}

/**
 * Most characters of an answer looked at for a reason, from its start (a
 * channel's error) or its end (a runner's body or stderr). A reason shows a
 * few hundred; blanking a whole answer of `runtime.maxReplyBytes` (up to 64
 * MiB) would hold the event loop for a visible time.
 */
export const ANSWER_WINDOW = 65_536;

/** An answer's free text for a reason: whitespace collapsed, secrets blanked, at most `max` characters. */
export function answerDetail(
  text: unknown,
  secrets: readonly string[] = [],
  max = ANSWER_DETAIL_MAX,
): string {
  if (typeof text !== 'string') return '';
  const cut = text.length > ANSWER_WINDOW;
  const window = collapse(cut ? text.slice(0, ANSWER_WINDOW) : text);
  // Blanked before the cut to `max`, so no cut can leave part of a secret.
  const out = cut ? blankCut(window, secrets, 'end') : blankSecrets(window, secrets);
  return out.length > max ? `${out.slice(0, max)}…` : out;
}

/**
 * The end of an answer (at most ANSWER_WINDOW characters) with its secrets
 * blanked, for a reason that shows its last characters; `cut` says the text
 * is already the end of something longer (a stream of which only the last
 * characters were kept).
 */
export function answerEnd(text: string, secrets: readonly string[], cut = false): string {
  const window = text.length > ANSWER_WINDOW ? text.slice(-ANSWER_WINDOW) : text;
  return cut || window !== text
    ? blankCut(window, secrets, 'start')
    : blankSecrets(window, secrets);
}

// A text cut at its start or end, blanked, without the characters at the cut where a secret
// cut in two would show a piece of itself unblanked.
function blankCut(text: string, secrets: readonly string[], at: 'start' | 'end'): string {
  const piece = Math.max(0, ...secrets.flatMap((s) => spellings(s).map((f) => f.length - 1)));
  const out = blankSecrets(text, secrets);
  return at === 'start' ? out.slice(piece) : out.slice(0, Math.max(0, out.length - piece));
}

/** A code-shaped field of an answer, or undefined unless it is a string of that shape (bounds included). */
export function answerCode(value: unknown, shape: RegExp): string | undefined {
  return typeof value === 'string' && shape.test(value) ? value : undefined;
}

/** The credentials a URL carries: its user info, and its query values (from MIN_GUESSED_SECRET_LENGTH). */
export function urlSecrets(url: string | undefined): string[] {
  if (!url) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const out = [parsed.username, parsed.password].flatMap((part) => [part, decode(part)]);
  for (const value of parsed.searchParams.values())
    if (value.length >= MIN_GUESSED_SECRET_LENGTH) out.push(value);
  return out.filter(Boolean);
}

/**
 * The credentials configured headers carry: every value (a header is
 * configured to authenticate or to route, and either is the caller's
 * business), and the credential after an auth scheme (`Bearer <token>`,
 * `Basic <base64>` with the user and password it encodes).
 */
export function headerSecrets(headers: Readonly<Record<string, string>> | undefined): string[] {
  const out: string[] = [];
  for (const value of Object.values(headers ?? {})) {
    out.push(value);
    const scheme = /^([A-Za-z][\w-]*)\s+(\S+)\s*$/.exec(value.trim());
    if (!scheme) continue;
    const credential = scheme[2] as string;
    out.push(credential);
    if (scheme[1]?.toLowerCase() === 'basic') {
      const pair = Buffer.from(credential, 'base64').toString('utf8');
      out.push(pair, pair.slice(pair.indexOf(':') + 1));
    }
  }
  return out.filter(Boolean);
}

/** Values that may be credentials (a command runner's `env`): those from MIN_GUESSED_SECRET_LENGTH. */
export function guessedSecrets(values: Iterable<string>): string[] {
  return [...values].filter((value) => value.trim().length >= MIN_GUESSED_SECRET_LENGTH);
}

// The secret as sent, and as an answer may quote it: URL-encoded (as a query value or
// component, as a path segment: a token in Telegram's path), form-encoded, JSON-escaped; each
// also with its whitespace collapsed (as answerDetail collapses the text).
function spellings(secret: string): string[] {
  const raw = secret.trim();
  if (!raw) return [];
  const escaped = JSON.stringify(raw).slice(1, -1);
  // URLs carry a lone surrogate as U+FFFD (and encodeURIComponent would throw on one).
  const whole = raw.toWellFormed();
  const form = new URLSearchParams({ s: whole }).toString().slice(2);
  const path = whole.replace(PATH_ENCODED, (c) => encodeURIComponent(c));
  const forms = [raw, encodeURIComponent(whole), path, form, escaped];
  return [...forms, ...forms.map(collapse)];
}

// What a URL parser percent-encodes in a path (WHATWG's path percent-encode set, and non-ASCII).
// biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are in the set.
const PATH_ENCODED = /[\x00-\x20"#<>?`{}\x7f-\u{10ffff}]/gu;

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
