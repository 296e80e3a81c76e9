/**
 * A query parameter's name as any server in a chain might read it: the
 * hook listener refuses a credential in the query by it, and the console's
 * journal drops credential-like parameters by it. Pure.
 */

// Percent-decoding rounds for a name: a proxy or framework in front may decode once more.
const DECODE_ROUNDS = 3;

/** A query parameter name as any server in the chain might read it. */
export function paramName(raw: string): string {
  let name = raw.replaceAll('+', ' ');
  for (let round = 0; round < DECODE_ROUNDS && name.includes('%'); round++) {
    name = name.replace(/%([0-9a-f]{2})/gi, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
  }
  // C parsers stop at NUL; `name[]`, `name[a][b]` are the parameter `name` in several frameworks.
  const nul = name.indexOf('\0');
  if (nul >= 0) name = name.slice(0, nul);
  const bracket = name.indexOf('[');
  if (bracket >= 0) name = name.slice(0, bracket);
  // PHP reads `.` and inner blanks in a name as `_` (`access.token` is `access_token` there).
  return name.trim().toLowerCase().replace(/[-. ]/g, '_');
}
