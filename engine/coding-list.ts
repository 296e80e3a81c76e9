/**
 * A coding list as HTTP writes one (Content-Encoding, Transfer-Encoding: `gzip, chunked`), split
 * into its codings. Shared by the request path (codings a sender used) and the outbound client
 * (codings an outside answer came in). Pure.
 */

/** The codings a coding list names (`gzip, chunked`), lower-cased, empty items left out. */
export function codingsOf(list: string): string[] {
  const codings: string[] = [];
  for (const item of list.split(',')) {
    const name = item.trim().toLowerCase();
    if (name !== '') codings.push(name);
  }
  return codings;
}
