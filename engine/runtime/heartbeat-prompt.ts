/**
 * The heartbeat's prompt: the pending system events as `System:` lines,
 * then the heartbeat prompt. Events carrying request text are wrapped; the
 * security notice is said once before the lines rather than once per event
 * (a heartbeat of 100 wake events repeated it 100 times: about half of the
 * prompt the agent reads, and of what hookgate builds and sends per event).
 */
import { SECURITY_NOTICE_ONCE, withoutOwnNotices } from '../safety.ts';

/** The message of a heartbeat over these events (oldest first). */
export function heartbeatMessage(
  events: readonly { text: string; trusted: boolean }[],
  prompt: string,
): string {
  const { texts, wrapped } = withoutOwnNotices(events);
  const lines = texts.map((text) => `System: ${text}`);
  return [
    ...(wrapped ? [SECURITY_NOTICE_ONCE, ''] : []),
    ...lines,
    ...(lines.length > 0 ? [''] : []),
    prompt,
  ].join('\n');
}
