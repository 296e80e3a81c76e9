/**
 * The `signedContent` template of a generic `hmac` route: literal text with
 * `{{body}}` (the raw body, exactly once) and `{{headers.<name>}}`
 * placeholders, e.g. `{{headers.x-timestamp}}.{{body}}`. Compiled once at
 * boot; at request time it only looks up headers and lists byte strings, so
 * the body is never copied or decoded.
 */
import type { ContentParts } from './digest-compare.ts';
import { headerBytes, isRefusal, type Refusal, singleHeader } from './header-access.ts';
import type { HeaderValues } from './verifier.ts';

/** One piece of the signed content. */
export type ContentPiece =
  | { kind: 'text'; text: string }
  | { kind: 'body' }
  | { kind: 'header'; name: string };

/** A compiled template: its pieces and the headers it needs (lower case, once each). */
export type ContentTemplate = { pieces: readonly ContentPiece[]; headers: readonly string[] };

/** The template used when none is configured: the raw body alone. */
export const BODY_ONLY: ContentTemplate = Object.freeze({
  pieces: Object.freeze([Object.freeze({ kind: 'body' as const })]),
  headers: Object.freeze([]),
});

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
const HEADER_NAME = /^headers\.([A-Za-z0-9!#$%&'*+.^_`|~-]{1,64})$/;

function piece(inner: string): ContentPiece | string {
  if (inner === 'body') return { kind: 'body' };
  const header = HEADER_NAME.exec(inner);
  if (header) return { kind: 'header', name: (header[1] as string).toLowerCase() };
  return `unknown placeholder {{${inner}}}: use {{body}} or {{headers.<name>}}`;
}

/** Compile a template, or say in one sentence what is wrong with it. */
export function compileSignedContent(template: string): ContentTemplate | string {
  const pieces: ContentPiece[] = [];
  let last = 0;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const text = template.slice(last, match.index);
    if (text.includes('{{') || text.includes('}}')) return 'unbalanced {{ }} in the template';
    if (text) pieces.push({ kind: 'text', text });
    const next = piece(match[1] as string);
    if (typeof next === 'string') return next;
    pieces.push(next);
    last = match.index + match[0].length;
  }
  const tail = template.slice(last);
  if (tail.includes('{{') || tail.includes('}}')) return 'unbalanced {{ }} in the template';
  if (tail) pieces.push({ kind: 'text', text: tail });
  // A signature that does not cover the body would authenticate any body.
  if (pieces.filter((p) => p.kind === 'body').length !== 1)
    return 'must contain {{body}} exactly once';
  const headers = [...new Set(pieces.flatMap((p) => (p.kind === 'header' ? [p.name] : [])))];
  return { pieces, headers };
}

/** The headers a template needs: each present exactly once, else the failure to report. */
export function checkContentHeaders(
  template: ContentTemplate,
  headers: HeaderValues,
): Refusal | undefined {
  for (const name of template.headers) {
    const header = singleHeader(headers, name);
    if (isRefusal(header)) return header;
  }
  return undefined;
}

/** The signed content for one request; call after checkContentHeaders passed. */
export function contentParts(
  template: ContentTemplate,
  headers: HeaderValues,
  raw: Buffer,
): ContentParts {
  return template.pieces.map((p) => {
    if (p.kind === 'body') return raw;
    if (p.kind === 'text') return p.text;
    return headerBytes(headers(p.name)[0] ?? '');
  });
}
