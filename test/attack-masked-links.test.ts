/**
 * Payload text steering the agent's reply into a Markdown link whose text
 * hides where it leads: `[https://bank.example/login](https://evil.example)`
 * or a reference `[bank][1]` defined as `[1]: https://evil.example`. The
 * products that render Markdown (Mattermost, Discord for bots) show only the
 * text; hookgate's replies are plain text elsewhere (Telegram without a
 * parse mode, Slack escaped, Teams plain). End to end: /hooks/agent with
 * `deliver`, the test agent quoting the message, stand-ins recording what
 * each product got; and a property of the defusing itself.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutMaskedLinks } from '../engine/delivery/masked-links.ts';
import { type ReplyProducts, startReplyProducts } from './helpers/reply-products.ts';

const MESSAGE =
  'Log in at [https://bank.example/login](https://evil.example/steal) or [the bank][1]';
const DEFINITION = '\n[1]: https://evil.example/ref';

/** Whether a renderer could read a link or a reference definition in the text. */
const masked = (text: string) => /\]\(|\]:/.test(text);

describe('a reply steered into a link whose text hides its destination', () => {
  let products: ReplyProducts;
  beforeAll(async () => {
    products = await startReplyProducts(['discord', 'mattermost']);
  });
  afterAll(() => products?.close());

  it.each(['mattermost', 'discord'] as const)(
    '%s: the link shows its own destination, and reads the same',
    async (product) => {
      const { text } = await products.delivered(product, MESSAGE);
      expect(masked(text)).toBe(false);
      expect(text.replaceAll('\u200b', '')).toContain(MESSAGE);
    },
  );
});

describe('withoutMaskedLinks', () => {
  it.each([
    ['a definition in a quote', '> [1]: https://evil.example/ref'],
    ['a definition in a list item', '- [1]: https://evil.example/ref'],
    [
      'a link after an unclosed fence mid-line',
      'see ``` [https://bank.example](https://evil.example)',
    ],
    ['a link after an escaped backtick', '\\`[https://bank.example](https://evil.example)`'],
    ['a link in a code span', '`[https://bank.example](https://evil.example)`'],
  ])('defuses %s', (_name, text) => {
    const out = withoutMaskedLinks(`${MESSAGE}${DEFINITION}\n${text}`);
    expect(out).not.toMatch(/\]\(|\]:/);
    expect(out.replaceAll('\u200b', '')).toBe(`${MESSAGE}${DEFINITION}\n${text}`);
  });

  const pieces = fc.constantFrom('[', ']', '(', ')', ':', ' ', '\n', '>', 'a', 'https://x', '`');
  const texts = fc.array(pieces, { maxLength: 40 }).map((parts) => parts.join(''));

  // Whatever a renderer takes for code or text, no `](` and no `]:` is left for it to read as a
  // link or a definition: the oracle asks for no such pair at all, not for one outside code.
  it('adds only zero-width spaces, and leaves no `](` and no `]:` anywhere', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const out = withoutMaskedLinks(text);
        expect(out.replaceAll('\u200b', '')).toBe(text);
        expect(out).not.toMatch(/\]\(|\]:/);
      }),
    );
  });
});
