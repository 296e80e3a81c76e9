/**
 * What of an outside service's answer (a runner's endpoint or process, a
 * channel or token API) may enter an error reason, and from there the log,
 * the stored outcome, `hookgate runs`, the console and the next heartbeat
 * prompt. The service was handed our credentials, so its answer may echo
 * them: free text goes in only with every credential the call carried
 * blanked and its length capped; a code-shaped field only when it has its
 * code's shape. The one path for both runners and channel adapters.
 *
 * An echo is looked for in views of the answer (answer-view.ts: decoded
 * zero to two times, case and whitespace folded) and blanked where it
 * stands in the answer's own text, so the rest of the reason reads as the
 * service wrote it. (Blanking the whole answer whenever a view held a
 * credential would be simpler but leave an operator no clue at all of what
 * went wrong, and the cut at a window's edge needs the views' spans anyway.)
 */
import { answerViews, credentialForms } from './answer-view.ts';
import { clipUnits, headUnits, tailUnits } from '../text-cut.ts';

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

/** `text` with every secret blanked, in any of the spellings answer-view.ts reads through. */
export function blankSecrets(text: string, secrets: readonly string[]): string {
  return blank(text, secrets);
}

/**
 * Most characters of an answer looked at for a reason, from its start (a
 * channel's error) or its end (a runner's body or stderr). A reason shows a
 * few hundred; blanking a whole answer of `runtime.maxReplyBytes` (up to 64
 * MiB) would hold the event loop for a visible time.
 */
export const ANSWER_WINDOW = 65_536;

/**
 * The characters looked at to show `shown` of them: room for every shown character spelled as
 * its longest escape (`\u0041`, `%25` twice) and for whitespace collapsed, within ANSWER_WINDOW.
 * Blanking a hostile 64 KiB of escapes took 45 ms per failure; a reason shows a few hundred.
 */
function windowFor(shown: number): number {
  return Math.min(ANSWER_WINDOW, 8 * shown + 1024);
}

/** An answer's free text for a reason: secrets blanked, whitespace collapsed, at most `max` characters. */
export function answerDetail(
  text: unknown,
  secrets: readonly string[] = [],
  max = ANSWER_DETAIL_MAX,
): string {
  if (typeof text !== 'string') return '';
  const size = windowFor(max);
  const cut = text.length > size;
  const window = cut ? headUnits(text, size) : text;
  // Blanked before the cut to `max`, so no cut can leave part of a secret.
  const out = collapse(blank(window, secrets, cut ? 'end' : undefined));
  return clipUnits(out, max);
}

/**
 * The end of an answer (enough characters to show its last `shown`) with its
 * secrets blanked, for a reason that shows its last characters; `cut` says the
 * text is already the end of something longer (a stream of which only the
 * last characters were kept).
 */
export function answerEnd(
  text: string,
  secrets: readonly string[],
  cut = false,
  shown = 500,
): string {
  const size = windowFor(shown);
  const window = text.length > size ? tailUnits(text, size) : text;
  return blank(window, secrets, cut || window !== text ? 'start' : undefined);
}

/**
 * `text` with the span of every echo of a secret, found in any of its views,
 * replaced by BLANK. A text cut at its start or end also loses the characters
 * at the cut where a secret cut in two could show a piece of itself: as many
 * as the longest form of a secret less one, counted in every view (an
 * encoded piece is longer in the text than in a view).
 */
function blank(text: string, secrets: readonly string[], cutAt?: 'start' | 'end'): string {
  const forms = [...new Set(secrets.flatMap(credentialForms))];
  if (!forms.length) return text;
  const views = answerViews(text);
  // +1 where a hidden span starts, -1 where it ends: overlapping echoes cost no more than one.
  const edges = new Int32Array(text.length + 1);
  for (const { text: seen, starts, ends } of views)
    for (const form of forms)
      for (let at = seen.indexOf(form); at !== -1; at = seen.indexOf(form, at + form.length)) {
        (edges[starts[at] as number] as number)++;
        (edges[ends[at + form.length - 1] as number] as number)--;
      }
  let [from, to] = [0, text.length];
  const piece = Math.max(...forms.map((form) => form.length - 1));
  if (cutAt && piece > 0)
    for (const { text: seen, starts, ends } of views) {
      const kept = seen.length > piece;
      if (cutAt === 'start') from = Math.max(from, kept ? (starts[piece] as number) : text.length);
      else to = Math.min(to, kept ? (ends[seen.length - piece - 1] as number) : 0);
    }
  return shown(text, edges, from, to);
}

// `text` from `from` to `to`, each run of hidden characters (a positive sum of edges) as one BLANK.
function shown(text: string, edges: Int32Array, from: number, to: number): string {
  let depth = 0;
  for (let i = 0; i < from; i++) depth += edges[i] as number;
  const parts: string[] = [];
  let runStart = from;
  let hidden = false;
  for (let i = from; i < to; i++) {
    depth += edges[i] as number;
    if (i > from && depth > 0 !== hidden) {
      parts.push(hidden ? BLANK : text.slice(runStart, i));
      runStart = i;
    }
    hidden = depth > 0;
  }
  if (runStart < to) parts.push(hidden ? BLANK : text.slice(runStart, to));
  return parts.join('');
}

/** A code-shaped field of an answer, or undefined unless it is a string of that shape (bounds included). */
export function answerCode(value: unknown, shape: RegExp): string | undefined {
  return typeof value === 'string' && shape.test(value) ? value : undefined;
}

/**
 * The credentials a URL carries: its user info, from MIN_GUESSED_SECRET_LENGTH its query values,
 * and the path segments that read as a token (a relay or webhook URL that authenticates by path,
 * `/agent/<token>/run`, `/bot<id>:<token>`): letters and digits mixed, or a run too long for a
 * word. An ordinary segment (`completions`, `webhooks`) is left readable in a reason.
 */
export function urlSecrets(url: string | undefined): string[] {
  if (!url) return [];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return [];
  }
  const out = [parsed.username, parsed.password].flatMap((part) => [part, decode(part)]);
  for (const segment of parsed.pathname.split('/')) if (tokenLike(segment)) out.push(segment);
  for (const value of parsed.searchParams.values())
    if (value.length >= MIN_GUESSED_SECRET_LENGTH) out.push(value);
  return out.filter(Boolean);
}

// Longer than any word a path is made of (`authorizations` is 14).
const WORD_MAX = 24;

/** A path segment that reads as a credential rather than a word. */
function tokenLike(segment: string): boolean {
  if (segment.length < MIN_GUESSED_SECRET_LENGTH) return false;
  return segment.length > WORD_MAX || (/[0-9]/.test(segment) && /[A-Za-z]/.test(segment));
}

// Headers whose value is a credential whatever its length (`x-api-key`, `x-auth-token`,
// `x-session-id`, `x-signature`…); others (`openai-version: 2`, `x-region: eu`) route.
const CREDENTIAL_HEADER =
  /^(?:proxy-)?authorization$|^cookie$|key|token|secret|auth|passw|signature|session/i;
// Schemes whose next word is a credential in any header (in a credential header, any scheme's is).
const AUTH_SCHEME = /^(?:bearer|basic|token|bot|apikey|api-key|key|oauth|dpop|sso-key|ssws)$/i;

/**
 * The credentials configured headers carry: the whole value of a credential
 * header and the credential after an auth scheme (`Bearer <token>`, `Basic
 * <base64>` with the user and password it encodes), whatever their length;
 * any other header's value, and each cookie's, from MIN_GUESSED_SECRET_LENGTH
 * (it may still be a credential under a name we do not know).
 */
export function headerSecrets(headers: Readonly<Record<string, string>> | undefined): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    const credentialHeader = CREDENTIAL_HEADER.test(name);
    if (credentialHeader) out.push(value);
    else out.push(...guessedSecrets([value]));
    if (name.toLowerCase() === 'cookie')
      out.push(
        ...guessedSecrets(value.split(';').map((pair) => pair.slice(pair.indexOf('=') + 1))),
      );
    const scheme = /^([A-Za-z][\w-]*)\s+(\S+)\s*$/.exec(value.trim());
    if (!scheme || !(credentialHeader || AUTH_SCHEME.test(scheme[1] as string))) continue;
    const credential = scheme[2] as string;
    out.push(credential);
    if (scheme[1]?.toLowerCase() === 'basic') {
      const pair = Buffer.from(credential, 'base64').toString('utf8');
      out.push(pair, pair.slice(pair.indexOf(':') + 1));
    }
  }
  return out.filter((secret) => secret.trim());
}

/** Values that may be credentials (a command runner's `env`): those from MIN_GUESSED_SECRET_LENGTH. */
export function guessedSecrets(values: Iterable<string>): string[] {
  return [...values].filter((value) => value.trim().length >= MIN_GUESSED_SECRET_LENGTH);
}

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
