/**
 * One Gmail `Message` resource (messages.get, format `full` or `metadata`) to the fields the
 * gmail preset shows: sender, recipients, subject, date, snippet and a plain-text body of at
 * most `maxBytes` UTF-8 bytes. Messages labelled SPAM, TRASH, DRAFT or SENT are excluded, as
 * OpenClaw does. The resource is untrusted JSON: anything malformed is skipped or reported as
 * a verdict, never thrown, and no input makes the work grow past the bounds of message-parts.ts
 * and the one budget of source bytes and markup tokens all its text parts share.
 */
import { decodeHTML } from 'entities';
import { htmlToText, MAX_MARKUP_TOKENS, type MarkupBudget } from './html-text.ts';
import { headerOf, own, ownString, type TextPart, textParts } from './message-parts.ts';
import { oneLine } from '../one-line.ts';
import { cutUtf8 } from '../utf8.ts';
import { charsetOf, decodePartText, toLf } from './part-body.ts';

/** Labels whose messages never become agent runs. */
export const EXCLUDED_LABELS = ['SPAM', 'TRASH', 'DRAFT', 'SENT'] as const;
export type ExcludedLabel = (typeof EXCLUDED_LABELS)[number];

/** Appended to a body that was cut; counted within `maxBytes`. */
export const TRUNCATION_MARK = '\n[…truncated]';

/** Where the body came from: a text/plain part, a text/html part, the snippet, or nowhere. */
export type BodySource = 'plain' | 'html' | 'snippet' | 'none';

/** The text of one message. Missing headers are empty strings. */
export type MessageText = {
  id: string;
  threadId: string;
  from: string;
  to: string;
  subject: string;
  /** The Date header when it parses, else internalDate as ISO 8601, else empty. */
  date: string;
  /** Gmail's snippet, HTML entities decoded. */
  snippet: string;
  body?: string;
  bodySource: BodySource;
  /** True when the body was cut to `maxBytes` (it then ends with TRUNCATION_MARK). */
  truncated: boolean;
  labelIds: string[];
};

/** What became of a resource: a message, an excluded one, or input that is not a message. */
export type MessageTextResult =
  | { verdict: 'accepted'; message: MessageText }
  | { verdict: 'excluded'; id: string; label: ExcludedLabel }
  | { verdict: 'invalid'; reason: 'not-an-object' | 'bad-id' };

export type MessageTextOptions = {
  /** Most UTF-8 bytes of body (hooks.gmail.maxBytes). */
  maxBytes: number;
  /** false: no body at all (hooks.gmail.includeBody). Default true. */
  includeBody?: boolean;
};

const ID = /^[A-Za-z0-9_-]{1,128}$/;
const HEADER_MAX_BYTES = 2048;
const SNIPPET_MAX_BYTES = 1024;
/** Most UTF-8 bytes of a message's text beside its body: sender, subject and snippet. */
export const MAIL_FIELDS_MAX_BYTES = 2 * HEADER_MAX_BYTES + SNIPPET_MAX_BYTES;
const MAX_LABELS = 100;
const MAX_LABELS_SCANNED = 10_000;
const MARK_BYTES = Buffer.byteLength(TRUNCATION_MARK);
// Every character that ends a line for a reader (or a model): not CR and LF alone, or a sender
// could start a line of their own ("New email from ...") under the From or Subject line.
const LINE_BREAKS = /[\r\n\v\f\u0085\u2028\u2029]+[ \t]*/g;
/**
 * Most source bytes decoded and read from all text parts of one message together, whatever
 * maxBytes says: a message's parts share one budget, so forty empty parts cost what one does.
 * 1 MiB holds the largest plain text maxBytes allows in any ASCII-compatible charset (not in
 * UTF-16: such a body is cut and marked) and keeps a message's text to ~20 ms on a small server.
 */
export const MAX_SOURCE_BYTES = 1024 * 1024;

// What reading one message's parts may still spend; the parts draw on it in turn.
type WorkBudget = MarkupBudget & { sourceBytes: number };

/** The text of a Gmail Message resource, or why there is none. */
export function messageText(resource: unknown, options: MessageTextOptions): MessageTextResult {
  const { maxBytes } = options;
  if (!Number.isInteger(maxBytes) || maxBytes < MARK_BYTES * 2) {
    throw new RangeError(`maxBytes must be an integer of at least ${MARK_BYTES * 2}`);
  }
  if (resource === null || typeof resource !== 'object' || Array.isArray(resource)) {
    return { verdict: 'invalid', reason: 'not-an-object' };
  }
  const id = ownString(resource, 'id');
  if (id === undefined || !ID.test(id)) return { verdict: 'invalid', reason: 'bad-id' };
  const { labelIds, label } = labelsOf(resource);
  if (label !== undefined) return { verdict: 'excluded', id, label };
  const payload = own(resource, 'payload');
  const snippet = snippetOf(resource);
  const threadId = ownString(resource, 'threadId') ?? '';
  const body = options.includeBody === false ? null : bodyOf(payload, maxBytes);
  const message: MessageText = {
    id,
    threadId: ID.test(threadId) ? threadId : '',
    from: headerText(payload, 'from'),
    to: headerText(payload, 'to'),
    subject: headerText(payload, 'subject'),
    date: dateOf(payload, resource),
    snippet,
    bodySource: 'none',
    truncated: false,
    labelIds,
  };
  if (body !== null) Object.assign(message, body);
  else if (options.includeBody !== false && snippet !== '') {
    Object.assign(message, { body: snippet, bodySource: 'snippet' });
  }
  return { verdict: 'accepted', message };
}

// First usable text/plain part, else the first usable text/html one, cut to maxBytes.
function bodyOf(
  payload: unknown,
  maxBytes: number,
): { body: string; bodySource: BodySource; truncated: boolean } | null {
  const { plain, html } = textParts(payload);
  const budget: WorkBudget = {
    sourceBytes: Math.min(4 * maxBytes + 4, MAX_SOURCE_BYTES),
    markupTokens: MAX_MARKUP_TOKENS,
  };
  // Two source bytes per kept byte covers UTF-16 charsets; +4 shows whether more followed.
  const found =
    firstText(plain, 2 * maxBytes + 4, budget, (text) => ({ text, cut: false }), 'plain') ??
    firstText(html, 4 * maxBytes + 4, budget, (text) => htmlToText(text, maxBytes, budget), 'html');
  if (found === null) return null;
  const whole = cutUtf8(found.text, maxBytes);
  if (!found.cut && !whole.cut) {
    return { body: found.text, bodySource: found.source, truncated: false };
  }
  const kept = cutUtf8(found.text, maxBytes - MARK_BYTES).text;
  return { body: kept + TRUNCATION_MARK, bodySource: found.source, truncated: true };
}

// The first part with text; each part read is paid from the message's budget, and once that is
// spent no further part is looked at.
function firstText(
  parts: TextPart[],
  maxPartBytes: number,
  budget: WorkBudget,
  toText: (text: string) => { text: string; cut: boolean },
  source: 'plain' | 'html',
): { text: string; cut: boolean; source: BodySource } | null {
  for (const part of parts) {
    if (budget.sourceBytes <= 0 || budget.markupTokens <= 0) return null;
    const allowed = Math.min(maxPartBytes, budget.sourceBytes);
    // Paid before decoding: a part that turns out invalid or empty was still examined.
    budget.sourceBytes -= Math.min(allowed, Math.ceil((part.data.length * 3) / 4));
    const decoded = decodePartText(part.data, charsetOf(part.contentType), allowed);
    if (decoded === null) continue;
    const converted = toText(toLf(decoded.text));
    if (converted.text.trim() === '') continue;
    return { text: converted.text, cut: converted.cut || decoded.sourceCut, source };
  }
  return null;
}

// A header's value on one line (folds and stray line breaks become spaces), bounded.
function headerText(payload: unknown, name: string): string {
  const value = headerOf(payload, name);
  if (value === undefined) return '';
  const line = value.slice(0, HEADER_MAX_BYTES * 2).replace(LINE_BREAKS, ' ');
  return cutUtf8(line.trim(), HEADER_MAX_BYTES).text;
}

function dateOf(payload: unknown, resource: object): string {
  const header = headerText(payload, 'date');
  if (header !== '' && Number.isFinite(Date.parse(header))) return header;
  const internal = ownString(resource, 'internalDate');
  if (internal !== undefined && /^\d{1,16}$/.test(internal)) {
    const date = new Date(Number(internal));
    if (Number.isFinite(date.getTime())) return date.toISOString();
  }
  return header;
}

// Gmail's snippet comes HTML-escaped (`&#39;`, `&amp;`): decoded, on one line, bounded.
function snippetOf(resource: object): string {
  const raw = ownString(resource, 'snippet');
  if (raw === undefined) return '';
  // Every line break NEL included: a sender cannot start a line of their own under it.
  return cutUtf8(oneLine(decodeHTML(raw.slice(0, SNIPPET_MAX_BYTES * 4))), SNIPPET_MAX_BYTES).text;
}

// The first MAX_LABELS labels are kept; an excluded label is looked for further, so padding
// the list cannot hide SPAM behind it.
function labelsOf(resource: object): { labelIds: string[]; label?: ExcludedLabel } {
  const labels = own(resource, 'labelIds');
  const labelIds: string[] = [];
  if (!Array.isArray(labels)) return { labelIds };
  const count = Math.min(labels.length, MAX_LABELS_SCANNED);
  for (let i = 0; i < count; i++) {
    const label = own(labels, String(i));
    if (typeof label !== 'string' || label.length === 0 || label.length > 128) continue;
    const excluded = EXCLUDED_LABELS.find((name) => name === label);
    if (excluded !== undefined) return { labelIds, label: excluded };
    if (labelIds.length < MAX_LABELS) labelIds.push(label);
  }
  return { labelIds };
}
