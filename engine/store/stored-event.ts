/**
 * A system event's text as a store row keeps it. An untrusted event's text
 * is a wrapper's (the security notice, the markers, the text between them);
 * the row leaves the notice out, since it is the same for every event and a
 * prompt that gathers events (a heartbeat's) says it once for all of them.
 * It was about half of a wake's event row. Read back, the text is what was
 * written, notice included (as long as the notice's words are the same: after
 * an upgrade that changes them, such a row is read with the new ones). A
 * trusted text is kept as it is. The SQLite store keeps rows so; PostgreSQL
 * rows keep the notice, since instances of two versions may share a database
 * during an upgrade, and its readers put it back only where it is missing. Pure.
 */
import {
  DEFAULT_LABEL,
  isBareWrapper,
  SECURITY_NOTICE,
  START_MARKER,
  withoutOwnNotice,
  wrapUntrusted,
} from '../safety.ts';

/** The text an event's row keeps. */
export function storedEventText(text: string, trusted: boolean): string {
  return trusted ? text : withoutOwnNotice(text);
}

/**
 * The event's text from its row: an untrusted wrapper without its notice gets it back; one that
 * kept it (written before, or to PostgreSQL) is read as it is. Either must be one whole wrapper:
 * a row that starts as a wrapper but is not one (another writer's, a damaged file) could carry
 * text past its end marker, outside the markers, so it is wrapped afresh, whole. Any other text
 * (hookgate's own words before a wrapper, as in a run's summary) is read as it is.
 */
export function restoredEventText(text: string, trusted: boolean): string {
  if (trusted) return text;
  const bare = withoutOwnNotice(text);
  if (!bare.startsWith(`<<<${START_MARKER} id="`)) return text;
  if (!isBareWrapper(bare)) return wrapUntrusted(text, DEFAULT_LABEL).text;
  return bare === text ? `${SECURITY_NOTICE}\n${text}` : text;
}
