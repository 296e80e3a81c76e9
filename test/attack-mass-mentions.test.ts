/**
 * Payload text steering the agent's reply into a mass ping: a reply that
 * says <!channel> (Slack) or @channel / @all / @here, or names a custom
 * group or person (Mattermost), reaches the product as plain text that
 * notifies nobody beyond the conversation's usual notice, as Discord's
 * replies already could not ping @everyone.
 * End to end: /hooks/agent with `deliver`, the test agent quoting the
 * message in its reply, stand-ins of both products recording what they got.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutMentions } from '../engine/delivery/adapters/mattermost.ts';
import { type ReplyProducts, startReplyProducts } from './helpers/reply-products.ts';

/**
 * The words Mattermost's server reads as mentions (its word rule, taken toward more mentions):
 * a word's leading `:.-_` are trimmed, and a word is split again at `.`, `-` and `:`, so
 * `-@channel` and `note.@all` mention too; then `@` and a name.
 */
function mentions(message: string): string[] {
  return message
    .split(/[^\p{L}\p{N}:._@-]+/u)
    .map((word) => word.replace(/^[:._-]+/, ''))
    .flatMap((word) => [word, ...word.split(/[.:-]+/)])
    .map((word) => word.replace(/[.:_-]+$/, '').toLowerCase())
    .filter((word) => /^@[\p{L}\p{N}_.-]/u.test(word));
}

describe('a reply steered into a mass ping', () => {
  let products: ReplyProducts;
  beforeAll(async () => {
    products = await startReplyProducts(['slack', 'mattermost']);
  });
  afterAll(() => products?.close());

  it('Slack: <!channel>, <!here> and <@U…> in the reply are text, not pings', async () => {
    const { text } = await products.delivered(
      'slack',
      'URGENT <!channel> <!here|here> <@U0ADA> read this',
    );
    expect(text).toContain('URGENT &lt;!channel&gt; &lt;!here|here&gt; &lt;@U0ADA&gt;');
    expect(text).not.toMatch(/<[!@]/);
  });

  it('Mattermost: @channel, @ALL, @here. and a custom group in the reply notify no one, and read the same', async () => {
    const message = 'URGENT @channel @ALL @here. read this, cc @all-staff @ada (ada@example.com)';
    const { text } = await products.delivered('mattermost', message);
    expect(mentions(text)).toEqual([]);
    expect(text.replaceAll('\u200b', '')).toContain(message);
    // An address is not a mention: it stays as it is, to be copied.
    expect(text).toContain('(ada@example.com)');
  });
});

describe('withoutMentions', () => {
  it.each([
    ['-@channel', '-@\u200bchannel'],
    ['_@here', '_@\u200bhere'],
    ['.@all', '.@\u200ball'],
    ['note.@all', 'note.@\u200ball'],
    ['see:@channel', 'see:@\u200bchannel'],
    ['ada@example.com', 'ada@example.com'],
  ])('%j becomes %j', (text, out) => {
    expect(withoutMentions(text)).toBe(out);
  });

  const pieces = fc.constantFrom(
    '@',
    'channel',
    'CHANNEL',
    'all',
    'here',
    'ada',
    ' ',
    '.',
    '-',
    '_',
    ':',
    '\n',
    'é',
    'x',
    '`',
  );
  const texts = fc.array(pieces, { maxLength: 40 }).map((parts) => parts.join(''));

  it('leaves no word Mattermost reads as a mention, and changes nothing else', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const out = withoutMentions(text);
        expect(mentions(out)).toEqual([]);
        expect(out.replaceAll('\u200b', '')).toBe(text);
      }),
    );
  });
});
