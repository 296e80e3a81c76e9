/**
 * An unexpected error as a log line may carry it. A store's error is given with its message
 * (SQLite's, or PostgreSQL's with its SQLSTATE: "no room left", "database is locked" are what
 * an operator needs, and they quote no credential). Any other error is named by its kind and
 * code only: a message may quote a URL it was given, credentials and all, or request text, and
 * no blanking of such text can be trusted to find every secret. Pure.
 */

const MAX_CHARS = 300;
// PostgreSQL's SQLSTATE: five digits or capital letters.
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * What kind of error a record (a run's reason, a heartbeat's error, a delivery's reason) may
 * name: its class, never its message.
 */
export function errorKind(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return typeof err;
  const code = (err as { code?: unknown }).code;
  const head = typeof code === 'string' ? `${err.name} ${code}` : err.name;
  const fromStore =
    typeof code === 'string' && (code === 'ERR_SQLITE_ERROR' || SQLSTATE.test(code));
  if (!fromStore) return head;
  return `${head}: ${err.message.replace(/\s+/g, ' ').slice(0, MAX_CHARS)}`;
}
