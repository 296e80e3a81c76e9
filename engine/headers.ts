/**
 * Request headers as rules, templates and transforms see them: lower-cased
 * names, one string per header, and without credentials or signatures.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { TOKEN_HEADER } from './auth.ts';

const SECRET_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'proxy-authorization',
  TOKEN_HEADER,
  'cookie',
  'set-cookie',
]);

// Signature and credential headers of webhook senders (x-hub-signature-256, stripe-signature,
// x-slack-signature, x-gitlab-token, x-api-key, ...).
const SECRET_PATTERN = /(?:^|-)(?:signature|token|secret|api-?key|password|auth)(?:-|$)/;

/** True for headers that carry credentials or signatures. */
export function isSecretHeader(name: string): boolean {
  return SECRET_HEADERS.has(name) || SECRET_PATTERN.test(name);
}

/** A prototype-free copy of the headers without secrets; repeated headers joined with ", ". */
export function publicHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || isSecretHeader(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
