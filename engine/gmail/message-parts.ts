/**
 * Walking a Gmail `MessagePart` tree that arrived as untrusted JSON. Every read is an own data
 * property (inherited keys and getters are never consulted), every value is type-checked where
 * it is read, and the walk is iterative with bounds on depth and on the number of parts, so a
 * hostile tree costs at most `MAX_PARTS` visits whatever its shape.
 */

/** How deep the walk goes below the payload; deeper parts are ignored. */
export const MAX_DEPTH = 32;
/** How many parts the walk visits in all; later ones are ignored. */
export const MAX_PARTS = 500;
/** How many headers of one part are looked at. */
export const MAX_HEADERS = 500;

/** A leaf of the tree that may hold the message text. */
export type TextPart = { mimeType: string; contentType: string | undefined; data: string };

/** The value of an own data property of an object, else undefined (never runs a getter). */
export function own(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object') return undefined;
  const descriptor = Object.getOwnPropertyDescriptor(value, key);
  return descriptor && 'value' in descriptor ? descriptor.value : undefined;
}

/** An own string property, else undefined. */
export function ownString(value: unknown, key: string): string | undefined {
  const found = own(value, key);
  return typeof found === 'string' ? found : undefined;
}

/** The first header named `name` (case-insensitive, RFC 5322) of a part, else undefined. */
export function headerOf(part: unknown, name: string): string | undefined {
  const headers = own(part, 'headers');
  if (!Array.isArray(headers)) return undefined;
  const wanted = name.toLowerCase();
  const count = Math.min(headers.length, MAX_HEADERS);
  for (let i = 0; i < count; i++) {
    const header = own(headers, String(i));
    const headerName = ownString(header, 'name');
    if (headerName === undefined || headerName.length > 256) continue;
    if (headerName.toLowerCase() !== wanted) continue;
    const value = ownString(header, 'value');
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The text/plain and text/html leaves of `payload` that carry inline data, in depth-first
 * document order. Attachments (a filename, an attachmentId or Content-Disposition: attachment) are skipped.
 */
export function textParts(payload: unknown): { plain: TextPart[]; html: TextPart[] } {
  const plain: TextPart[] = [];
  const html: TextPart[] = [];
  let visited = 0;
  // Frames of (siblings, next index, depth): no recursion, and a parts array is never copied.
  const stack: { parts: unknown[]; index: number; depth: number }[] = [
    { parts: [payload], index: 0, depth: 0 },
  ];
  while (stack.length > 0 && visited < MAX_PARTS) {
    const frame = stack[stack.length - 1]!;
    if (frame.index >= frame.parts.length) {
      stack.pop();
      continue;
    }
    const part = own(frame.parts, String(frame.index));
    frame.index++;
    visited++;
    const children = own(part, 'parts');
    if (Array.isArray(children) && children.length > 0) {
      if (frame.depth < MAX_DEPTH)
        stack.push({ parts: children, index: 0, depth: frame.depth + 1 });
      continue;
    }
    const leaf = textLeaf(part);
    if (leaf?.mimeType === 'text/plain') plain.push(leaf);
    else if (leaf?.mimeType === 'text/html') html.push(leaf);
  }
  return { plain, html };
}

// A leaf part with inline text data, or null (attachment, container, no data, other type).
function textLeaf(part: unknown): TextPart | null {
  const mimeType = ownString(part, 'mimeType')?.toLowerCase();
  if (mimeType !== 'text/plain' && mimeType !== 'text/html') return null;
  const filename = ownString(part, 'filename');
  if (filename !== undefined && filename !== '') return null;
  const body = own(part, 'body');
  const attachmentId = ownString(body, 'attachmentId');
  if (attachmentId !== undefined && attachmentId !== '') return null;
  const disposition = headerOf(part, 'content-disposition');
  if (disposition !== undefined && /^\s*attachment\b/i.test(disposition)) return null;
  const data = ownString(body, 'data');
  if (data === undefined || data === '') return null;
  return { mimeType, contentType: headerOf(part, 'content-type'), data };
}
