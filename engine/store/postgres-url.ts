/**
 * The shape of a PostgreSQL URL that cannot be read as meant. A password with an unencoded `/`,
 * `?` or `#` ends the URL's host early: the rest of the password reads as the port, path, query
 * or fragment (and would be connected to, and shown, as such). An `@` after the host is the sign
 * of it: a percent-encoded user and password leave none. Pure.
 */
export function atAfterHost(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return `${parsed.pathname}${parsed.search}${parsed.hash}`.includes('@');
}
