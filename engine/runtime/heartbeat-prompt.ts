/**
 * The heartbeat's prompt: the pending system events as `System:` lines,
 * then the heartbeat prompt. Events carrying request text are wrapped; the
 * security notice is said once before the lines rather than once per event
 * (a heartbeat of 100 wake events repeated it 100 times: about half of the
 * prompt the agent reads, and of what hookgate builds and sends per event).
 * The events a heartbeat shows fit its share of runtime.maxPromptBytes
 * (prompt-budget.ts): those past it wait for the next heartbeat.
 */
import { SECURITY_NOTICE_ONCE, withoutOwnNotices } from '../safety.ts';
import { byteLength } from '../utf8.ts';
import { batchCount } from './prompt-budget.ts';
import { cutPrompt } from './prompt-cut.ts';

type EventText = { text: string; trusted: boolean };

/** What each event's line adds to its text: `System: ` and the line break. */
export const EVENT_LINE_BYTES = byteLength('System: \n');

/**
 * The bytes of a message of `messageBytes` left for its events' lines: what the notice, the
 * blank lines and the prompt leave (at most; the notice is said only over a wrapped event).
 */
export function eventsRoom(messageBytes: number, prompt: string): number {
  return messageBytes - byteLength(SECURITY_NOTICE_ONCE) - byteLength(prompt) - 3;
}

/**
 * The events a heartbeat shows, of those read (oldest first), as the prompt shows them (no
 * wrapper's own notice): the leading ones whose lines fit `room` bytes, and at least the first,
 * cut to fit (inside its wrapper) when it is larger on its own.
 */
export function heartbeatEvents(events: readonly EventText[], room: number): EventText[] {
  const { texts } = withoutOwnNotices(events);
  const sizes = texts.map((text) => byteLength(text) + EVENT_LINE_BYTES);
  const count = batchCount(sizes, room);
  return texts.slice(0, count).map((text, i) => {
    const { trusted } = events[i] as EventText;
    const fits = (sizes[i] as number) <= room;
    return { text: fits ? text : cutPrompt(text, trusted, room - EVENT_LINE_BYTES), trusted };
  });
}

/** The message of a heartbeat over these events (oldest first). */
export function heartbeatMessage(events: readonly EventText[], prompt: string): string {
  const { texts, wrapped } = withoutOwnNotices(events);
  const lines = texts.map((text) => `System: ${text}`);
  return [
    ...(wrapped ? [SECURITY_NOTICE_ONCE, ''] : []),
    ...lines,
    ...(lines.length > 0 ? [''] : []),
    prompt,
  ].join('\n');
}
