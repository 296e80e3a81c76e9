/**
 * Reading wrapped texts in tests: the content between the safety markers.
 */
import { expect } from 'vitest';
import { SECURITY_NOTICE, SECURITY_NOTICE_ONCE } from '../../engine/safety.ts';

const WRAPPED =
  /^([\s\S]*)\n<<<EXTERNAL_UNTRUSTED_CONTENT id="([0-9a-f]+)">>>\nSource: (.*)\n---\n([\s\S]*)\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id="\2">>>$/;

/** Assert a text is wrapped exactly once and return its label and content. */
export function unwrap(text: string): { label: string; content: string; id: string } {
  const match = WRAPPED.exec(text);
  expect(match, `not a wrapped text: ${text.slice(0, 120)}`).not.toBeNull();
  const [, notice, id, label, content] = match as unknown as string[];
  expect(notice).toBe(SECURITY_NOTICE);
  return { label: label as string, content: content as string, id: id as string };
}

/**
 * The message a heartbeat sends over stored events: the security notice once before the
 * `System:` lines when any event has a wrapper, each wrapped event's wrappers without their own
 * notice (a raw, trusted event is shown as stored), then the prompt.
 */
export function heartbeatLines(
  events: readonly { text: string; trusted: boolean }[],
  prompt: string,
): string {
  const start = '<<<EXTERNAL_UNTRUSTED_CONTENT id="';
  const lines = events.map(
    ({ text, trusted }) =>
      `System: ${trusted ? text : text.replaceAll(`${SECURITY_NOTICE}\n${start}`, start)}`,
  );
  const wrapped = events.some(({ text }) => text.includes(start));
  return [...(wrapped ? [SECURITY_NOTICE_ONCE, ''] : []), ...lines, '', prompt].join('\n');
}
