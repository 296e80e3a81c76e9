/**
 * Attack: an agent whose reply holds a lone surrogate (a model cut off mid-emoji writes
 * `"\ud83d"` in its JSON; some do so routinely). The reply was sent to the channel as it came, a
 * `\ud83d` escape in the request's JSON, which no UTF-8 text can hold: Telegram refuses such a
 * text ("text must be encoded in UTF-8"), so the whole part failed and the owner got nothing.
 * What a channel is sent is well-formed: the lone surrogate arrives as U+FFFD, as the store keeps it.
 */
import { afterEach, expect, it } from 'vitest';
import { deliverToTelegram } from './helpers/telegram-delivery.ts';
import { startStub } from './helpers/runtime.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of cleanups.splice(0).reverse()) await close();
});

/** A Telegram stand-in that refuses a text no UTF-8 can carry, as Telegram does. */
async function strictTelegram() {
  const chat = await startStub((_i, exchange) => {
    const text = (exchange.body as { text?: unknown }).text;
    if (typeof text === 'string' && !text.isWellFormed())
      return {
        status: 400,
        body: {
          ok: false,
          error_code: 400,
          description: 'Bad Request: text must be encoded in UTF-8',
        },
      };
    return { body: { ok: true, result: { message_id: 1 } } };
  });
  cleanups.push(() => chat.close());
  return chat;
}

it.each([
  ['a short reply cut off mid-emoji', 'Found 3 matching orders \ud83d'],
  [
    'a lone low surrogate deep in a reply sent in two parts',
    `${'word '.repeat(1000)}tail \udc8e end`,
  ],
])('%s is delivered, the lone surrogate as U+FFFD', async (_name, reply) => {
  const chat = await strictTelegram();
  const run = await deliverToTelegram({
    baseUrl: chat.url,
    reply,
    timeoutMs: 5000,
    maxAttempts: 2,
    waitMs: 20_000,
    cleanups,
  });
  const outcome = run.outcome as { delivery?: { state?: string; reason?: string } };
  expect(outcome.delivery?.state, outcome.delivery?.reason).toBe('sent');
  const texts = chat.exchanges.map((e) => String((e.body as { text: unknown }).text));
  expect(texts.every((text) => text.isWellFormed())).toBe(true);
  expect(texts.join(' ').replace(/\s+/g, ' ')).toBe(reply.toWellFormed().replace(/\s+/g, ' '));
});
