/**
 * The shape of a PostgreSQL URL that cannot be read as meant. A password with an unencoded `/`,
 * `?` or `#` ends the URL's host early: the rest of the password reads as the port, path, query
 * or fragment, and would be connected to, and shown, as such. Pure.
 */

function parts(url: string): { path: string; query: string; fragment: string } | undefined {
  try {
    const parsed = new URL(url);
    return { path: parsed.pathname, query: parsed.search, fragment: parsed.hash };
  } catch {
    return undefined;
  }
}

/**
 * An `@` anywhere after the host: the sign of such a password, or a legitimate query value
 * (`?application_name=worker@eu-1`, `?user=admin@server`). Never shown whole (backend.ts).
 */
export function atAfterHost(url: string): boolean {
  const found = parts(url);
  return found !== undefined && `${found.path}${found.query}${found.fragment}`.includes('@');
}

// In a query, an `@` followed by what a host and database look like: `@db:5432/app`, `@db/app`,
// `@[::1]:5432/app`.
const HOST_AFTER_AT = /@(?:\[[^\]@]*\]|[^&=/:@[]*)(?::\d+)?\//;

/**
 * The password's rest read as the URL's path, fragment or query: an `@` in the path or the
 * fragment (an encoded user and password leave none there), or an `@` in the query followed by
 * a host and a database (`?Xk9=@db:5432/app`), which no query value of the driver's takes.
 */
export function passwordSpilled(url: string): boolean {
  const found = parts(url);
  if (!found) return false;
  return (
    found.path.includes('@') || found.fragment.includes('@') || HOST_AFTER_AT.test(found.query)
  );
}
