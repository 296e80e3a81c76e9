/**
 * Where hookgate may send a secret or trust an answer: an https URL, or plain http on loopback
 * only (a local stand-in or sidecar). Over plain http elsewhere anyone on the path reads the
 * token (a bot's, the mail flow's refresh token and client secret) or swaps what is trusted
 * (the push signing keys).
 */

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Whether `text` is an https URL, or an http one whose host is loopback. */
export function isSecureUrl(text: string): boolean {
  const url = URL.parse(text);
  if (url === null) return false;
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}
