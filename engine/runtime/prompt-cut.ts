/**
 * Cutting a text a runner is sent, or a turn stored, to a byte budget
 * (prompt-budget.ts), with a mark that says so. Untrusted text stays inside
 * its safety wrapper: a wrapper's content is cut and the wrapper's own
 * header and end marker are put back around it, never the end marker cut
 * off; an untrusted text of any other shape is wrapped afresh once cut.
 * Pure.
 */
import {
  DEFAULT_LABEL,
  END_MARKER,
  isBareWrapper,
  SECURITY_NOTICE,
  withoutOwnNotice,
  wrapUntrusted,
} from '../safety.ts';
import { byteLength, cutUtf8 } from '../utf8.ts';

/** What a cut text ends with (hookgate's words, inside the wrapper when there is one). */
export function cutMark(omitted: number): string {
  return `[cut by hookgate: ${omitted} more bytes not shown (runtime.maxPromptBytes)]`;
}

// The mark's room: its longest number (2^53 has 16 digits) and the line break before it.
const MARK_BYTES = byteLength(cutMark(Number.MAX_SAFE_INTEGER)) + 1;

/** A plain text cut to `maxBytes`, the mark included (as it is when it fits). */
export function cutPlain(text: string, maxBytes: number): string {
  const size = byteLength(text);
  if (size <= maxBytes) return text;
  const kept = cutUtf8(text, maxBytes - MARK_BYTES).text;
  return `${kept}\n${cutMark(size - byteLength(kept))}`;
}

/**
 * A text a runner is sent, cut to `maxBytes` (as it is when it fits). A trusted text is cut as
 * plain text. An untrusted one that is a wrapper (its own notice before it or not) keeps its
 * notice, header and end marker, its content cut with the mark inside; any other untrusted text
 * is cut and wrapped afresh, so nothing it holds reaches the agent outside the markers (with the
 * notice when the text began with it). A wrapper's header, end marker and the mark are kept even
 * where they alone pass a budget that small.
 */
export function cutPrompt(text: string, trusted: boolean, maxBytes: number): string {
  if (byteLength(text) <= maxBytes) return text;
  if (trusted) return cutPlain(text, maxBytes);
  const bare = withoutOwnNotice(text);
  if (isBareWrapper(bare)) {
    const notice = bare === text ? '' : `${SECURITY_NOTICE}\n`;
    return notice + cutWrapper(bare, maxBytes - byteLength(notice));
  }
  return cutAndWrap(text, text.startsWith(SECURITY_NOTICE), maxBytes);
}

/** A bare wrapper (isBareWrapper) cut to `maxBytes`: its content cut, the mark inside. */
function cutWrapper(bare: string, maxBytes: number): string {
  // The header ends at the first `---` line: the source line before it has no line break.
  const contentAt = bare.indexOf('\n---\n') + 5;
  const endAt = bare.lastIndexOf(`\n<<<${END_MARKER} id="`);
  const header = bare.slice(0, contentAt);
  const end = bare.slice(endAt);
  const content = bare.slice(contentAt, endAt);
  const room = maxBytes - byteLength(header) - byteLength(end) - MARK_BYTES;
  const kept = cutUtf8(content, room).text;
  const mark = cutMark(byteLength(content) - byteLength(kept));
  return `${header}${kept}${kept === '' ? '' : '\n'}${mark}${end}`;
}

/** Untrusted text of no known shape: cut, then wrapped afresh (its markers neutralised). */
function cutAndWrap(text: string, withNotice: boolean, maxBytes: number): string {
  const wrap = (content: string) => {
    const wrapped = wrapUntrusted(content, DEFAULT_LABEL).text;
    return withNotice ? wrapped : withoutOwnNotice(wrapped);
  };
  let room = maxBytes - byteLength(wrap(''));
  // Neutralising can lengthen the content: cut shorter until the whole fits.
  for (;;) {
    const wrapped = wrap(cutPlain(text, Math.max(room, MARK_BYTES)));
    const size = byteLength(wrapped);
    if (size <= maxBytes || room <= MARK_BYTES) return wrapped;
    room -= size - maxBytes;
  }
}
