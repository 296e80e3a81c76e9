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
  isBareWrapper,
  START_MARKER,
  withOwnNotice,
  withoutOwnNotice,
  wrapUntrusted,
} from '../safety.ts';

/** The label a row wrapped afresh carries. */
const FALLBACK_LABEL = 'Webhook';

/** The text an event's row keeps. */
export function storedEventText(text: string, trusted: boolean): string {
  return trusted ? text : withoutOwnNotice(text);
}

/**
 * The event's text from its row: an untrusted text without its notice gets it back (rows that
 * kept theirs, written before, read as they are). An untrusted row that starts at a start marker
 * but is not one whole wrapper (another writer's, a damaged file) could carry text past its end
 * marker, outside the markers: it is wrapped afresh, whole, never given back as it is.
 */
export function restoredEventText(text: string, trusted: boolean): string {
  if (trusted || !text.startsWith(`<<<${START_MARKER} id="`)) return text;
  return isBareWrapper(text) ? withOwnNotice(text) : wrapUntrusted(text, FALLBACK_LABEL).text;
}
