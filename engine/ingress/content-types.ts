/**
 * The body stage's choice of parser by Content-Type. JSON (`application/json`,
 * `application/<x>+json`, `text/plain`, or no Content-Type at all) is parsed
 * as a JSON object; `application/x-www-form-urlencoded` is decoded as a form where the
 * route accepts forms; anything else is refused 415 `unsupported_media_type`.
 * A charset parameter other than UTF-8 is refused too: bodies are decoded as
 * UTF-8 only. `bodyFormat` needs the header alone, so the pipeline can refuse
 * before reading a byte of the body. A body sent with a content coding (gzip,
 * br...) is refused 415 `unsupported_content_encoding`: bodies are read as sent.
 */
import { MIMEType } from 'node:util';
import { parseJsonObject } from '../body.ts';
import { codingsOf } from '../coding-list.ts';
import { HookError } from '../errors.ts';
import { parseForm } from './form.ts';

/** How a body is parsed. */
export type BodyFormat = 'json' | 'form';

/** Per-route parsing limits: JSON nesting depth, and whether forms are accepted at all. */
export type BodyParseLimits = { maxDepth: number; forms: boolean };

const JSON_TYPE = 'application/json';
const FORM_TYPE = 'application/x-www-form-urlencoded';
const TEXT_TYPE = 'text/plain';
// Labels the WHATWG Encoding Standard maps to UTF-8 that senders actually use.
const UTF8_LABELS: ReadonlySet<string> = new Set(['utf-8', 'utf8']);

// Senders repeat a handful of Content-Type values: each is parsed once, not per request. The
// decision (a format, or the refusal) depends on the header and `forms` alone. A flood of distinct
// values only restarts the memo: it never holds more than MEMO_LIMIT of them.
const MEMO_LIMIT = 64;
const decided: Record<'forms' | 'jsonOnly', Map<string, BodyFormat | HookError>> = {
  forms: new Map(),
  jsonOnly: new Map(),
};

// Built once: a flood of such requests allocates nothing per refusal.
const CONTENT_CODED = new HookError('unsupported_content_encoding');

/**
 * 415 for a body sent with a content coding other than `identity`. hookgate does not decode
 * content codings (webhook senders do not use them): read as if absent, a gzipped body was
 * refused as invalid JSON, and a plain body labelled gzip was accepted. Pure.
 */
export function contentCodingRefusal(
  contentEncoding: string | undefined,
): HookError<'unsupported_content_encoding'> | undefined {
  if (contentEncoding === undefined) return undefined;
  return codingsOf(contentEncoding).some((coding) => coding !== 'identity')
    ? CONTENT_CODED
    : undefined;
}

/**
 * The format a request's Content-Type field lines select: at most one line (RFC 9110 5.3: the
 * field is a singleton), else a 415. Node keeps the first of repeated lines; a proxy or filter in
 * front may read the last, and then a body it screened as JSON was parsed here as a form.
 */
export function bodyFormatOfLines(lines: readonly string[], forms: boolean): BodyFormat {
  if (lines.length > 1) throw forms ? REPEATED.forms : REPEATED.jsonOnly;
  return bodyFormat(lines[0], forms);
}

/** The format a Content-Type header selects, or a 415 HookError if the route cannot take it. */
export function bodyFormat(contentType: string | undefined, forms: boolean): BodyFormat {
  // No Content-Type at all: JSON, as hookgate has always read it.
  if (contentType === undefined) return 'json';
  const memo = forms ? decided.forms : decided.jsonOnly;
  let decision = memo.get(contentType);
  if (decision === undefined) {
    decision = decideBodyFormat(contentType, forms);
    if (memo.size >= MEMO_LIMIT) memo.clear();
    memo.set(contentType, decision);
  }
  if (decision instanceof HookError) throw decision;
  return decision;
}

/** The decision for one Content-Type value, made afresh (what bodyFormat keeps): pure. */
export function decideBodyFormat(contentType: string, forms: boolean): BodyFormat | HookError {
  try {
    return formatFor(contentType, forms);
  } catch (err) {
    if (err instanceof HookError) return err;
    throw err;
  }
}

function formatFor(contentType: string, forms: boolean): BodyFormat {
  let media: MIMEType;
  try {
    media = new MIMEType(contentType);
  } catch {
    throw unsupported('The Content-Type header is not a valid media type.', forms);
  }
  const format = formatOf(media);
  if (format === undefined) {
    throw unsupported(`The media type ${media.essence} is not accepted.`, forms, media.essence);
  }
  if (format === 'form' && !forms) {
    throw unsupported('This endpoint takes a JSON body, not a form.', forms, media.essence);
  }
  const charset = media.params.get('charset');
  if (charset !== null && !UTF8_LABELS.has(charset.toLowerCase())) {
    throw unsupported('Only charset=utf-8 is accepted.', forms, media.essence);
  }
  // MIMEType keeps the first of a repeated charset and drops one it cannot read (`charset
  // =latin1`): a reader that takes the last, or is more lenient, would decode another charset.
  const written = charsetsWritten(contentType);
  if (written > 1 || (written === 1 && charset === null)) {
    throw unsupported('Give one charset parameter, charset=utf-8.', forms, media.essence);
  }
  return format;
}

/**
 * How many parameters of a media type are named `charset` (any letter case, white space around
 * the name), split as WHATWG's MIME type parser splits them: at `;` outside a quoted value. Pure.
 */
export function charsetsWritten(contentType: string): number {
  // One pass, each character looked at once: a value of thousands of `;` with no `=` after
  // them must not be scanned to its end for every one of them.
  const length = contentType.length;
  let count = 0;
  let at = contentType.indexOf(';');
  while (at >= 0) {
    // The name runs from after the `;` to the next `=` or `;`.
    let end = at + 1;
    while (end < length && contentType[end] !== '=' && contentType[end] !== ';') end++;
    // Shorter than `charset` is not it: empty names (`;;;`) cost nothing.
    const named = end - at > CHARSET.length && contentType.slice(at + 1, end).trim();
    if (named && named.toLowerCase() === CHARSET) count++;
    if (end >= length) break;
    if (contentType[end] === ';') {
      at = end;
      continue;
    }
    // A value: a quoted one may hold `;`, so the parameter ends at the first `;` after its
    // closing quote.
    let next = end + 1;
    if (contentType[next] === '"') next = afterQuoted(contentType, next);
    at = next < 0 ? -1 : contentType.indexOf(';', next);
  }
  return count;
}

const CHARSET = 'charset';

/** The index just past a quoted string starting at `open` (backslash escapes one character). */
function afterQuoted(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i + 1;
  }
  return -1;
}

/** Parse a body by its Content-Type into an object, or throw the HookError that refuses it. */
export function parseBody(
  raw: Buffer,
  contentType: string | undefined,
  limits: BodyParseLimits,
): Record<string, unknown> {
  return parseAs(raw, bodyFormat(contentType, limits.forms), limits.maxDepth);
}

/** Parse a body in a format already chosen from its Content-Type. */
export function parseAs(
  raw: Buffer,
  format: BodyFormat,
  maxDepth: number,
): Record<string, unknown> {
  return format === 'form' ? parseForm(raw, maxDepth) : parseJsonObject(raw, maxDepth);
}

function formatOf(media: MIMEType): BodyFormat | undefined {
  // text/plain is what fetch() and many small senders put on a JSON string: read as JSON.
  if (media.essence === JSON_TYPE || media.essence === TEXT_TYPE) return 'json';
  if (media.essence === FORM_TYPE) return 'form';
  // Structured syntax suffix (RFC 6839): application/vnd.github+json, application/cloudevents+json.
  const { type, subtype } = media;
  if (type === 'application' && subtype.length > 5 && subtype.endsWith('+json')) return 'json';
  return undefined;
}

const JSON_ONLY = Object.freeze({
  accepted: Object.freeze([JSON_TYPE, 'application/*+json', TEXT_TYPE]),
  hint: `Send Content-Type: ${JSON_TYPE}.`,
});
const JSON_OR_FORM = Object.freeze({
  accepted: Object.freeze([JSON_TYPE, 'application/*+json', TEXT_TYPE, FORM_TYPE]),
  hint: `Send Content-Type: ${JSON_TYPE} (or application/<type>+json) or ${FORM_TYPE}, in UTF-8.`,
});

// Built once: a flood of such requests allocates nothing per refusal.
const REPEATED_MESSAGE = 'The Content-Type header is sent more than once.';
const REPEATED = {
  forms: unsupported(REPEATED_MESSAGE, true),
  jsonOnly: unsupported(REPEATED_MESSAGE, false),
};

function unsupported(message: string, forms: boolean, mediaType?: string): HookError {
  const { accepted, hint } = forms ? JSON_OR_FORM : JSON_ONLY;
  // The media type goes back as details (essence only: parameters may hold anything).
  return new HookError('unsupported_media_type', `${message} ${hint}`, {
    details: { accepted, ...(mediaType !== undefined && { mediaType }) },
  });
}
