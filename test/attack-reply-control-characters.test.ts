/**
 * Attack: a payload gets the agent to repeat control characters in its reply (an escape sequence
 * that sets a title or clears a screen, a NUL, backspaces over the words before them). The reply
 * went to the channel as it came: in a chat, its notification or a bridge's log, such characters
 * can hide, reorder or rewrite the text around them (a right-to-left override reverses what
 * follows it). What a channel is sent holds none but tab and the
 * line ends: each other one arrives as U+FFFD, one for one; the stored reply keeps them.
 */
import { afterEach, expect, it } from 'vitest';
import { deliverToTelegram } from './helpers/telegram-delivery.ts';
import { startStub } from './helpers/runtime.ts';

// C0 but tab, line feed and carriage return; DEL; C1; bidi embeddings, overrides, isolates.
const CONTROLS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding controls is the point.
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

it.each([
  ['an escape sequence setting a title', 'Done.\u001b]0;Payment approved\u0007 See the log.'],
  ['backspaces over the words before them', 'Refund denied\b\b\b\b\b\bapproved, NUL\u0000 end'],
  [
    'a right-to-left override that makes an amount read reversed, and an isolate',
    'Refund of \u202e0051\u202c EUR approved for \u2067report.pdf\u2069, \u200fשלום\u200f kept',
  ],
  [
    'C1 controls and DEL deep in a reply sent in two parts',
    `${'word '.repeat(1000)}tail \u009b2J\u007f end`,
  ],
])(
  '%s: each control character arrives as U+FFFD, tabs and line ends as they are',
  async (_name, body) => {
    const reply = `${body}\n\tindented\r\nlast line`;
    const chat = await startStub(() => ({ body: { ok: true, result: { message_id: 1 } } }));
    cleanups.push(() => chat.close());
    const run = await deliverToTelegram({
      baseUrl: chat.url,
      reply,
      timeoutMs: 5000,
      maxAttempts: 2,
      waitMs: 20_000,
      cleanups,
    });
    const outcome = run.outcome as {
      reply?: string;
      delivery?: { state?: string; reason?: string };
    };
    expect(outcome.delivery?.state, outcome.delivery?.reason).toBe('sent');
    const texts = chat.exchanges.map((e) => String((e.body as { text: unknown }).text));
    const sent = texts.join(' ');
    expect(sent.match(CONTROLS)).toBeNull();
    expect(sent).toContain('\n\tindented\r\nlast line');
    const expected = reply.replace(CONTROLS, '\uFFFD');
    expect(sent.replace(/\s+/g, ' ')).toBe(expected.replace(/\s+/g, ' '));
    // The store keeps the reply as the agent gave it.
    expect(outcome.reply).toBe(reply);
  },
);
