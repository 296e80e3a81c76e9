/**
 * Writing the admin listener's answers: JSON, the console's page and assets,
 * and the headers every answer carries (nothing is cached, nothing sniffed,
 * no referrer leaves the console, the page is never framed).
 */
import type { ServerResponse } from 'node:http';
import type { AdminError } from './admin-errors.ts';

const COMMON = Object.freeze({
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
});

/** The headers every answer carries, as a flat name/value list (for answers written raw). */
export const COMMON_HEADERS: readonly string[] = Object.freeze(Object.entries(COMMON).flat());

// No inline script or style at all: the page's code is /console.js, its style /console.css.
const PAGE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** Send a JSON value. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  sendBody(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** Send a refusal. */
export function sendAdminError(res: ServerResponse, error: AdminError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  sendBody(res, error.status, 'application/json; charset=utf-8', error.toJson());
}

/** Send a body of a given type. */
export function sendBody(
  res: ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
): void {
  const headers: Record<string, string | number> = {
    ...COMMON,
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
  };
  if (contentType.startsWith('text/html')) {
    headers['content-security-policy'] = PAGE_POLICY;
    headers['x-frame-options'] = 'DENY';
  }
  res.writeHead(status, headers);
  res.end(body);
}

/** Start an event stream (the console reads it with fetch, so it can send the token). */
export function startStream(res: ServerResponse): void {
  res.writeHead(200, {
    ...COMMON,
    'content-type': 'text/event-stream; charset=utf-8',
    connection: 'keep-alive',
  });
  res.write(': live\n\n');
}
