/**
 * Payload text steering the agent's reply into a mass ping: a reply that
 * says <!channel> (Slack) or @channel / @all / @here (Mattermost) reaches
 * the product as plain text that notifies nobody beyond the conversation's
 * usual notice, as Discord's replies already could not ping @everyone.
 * End to end: /hooks/agent with `deliver`, the test agent quoting the
 * message in its reply, stand-ins of both products recording what they got.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutChannelMentions } from '../engine/delivery/adapters/mattermost.ts';
import { type ReplyProducts, startReplyProducts } from './helpers/reply-products.ts';

/** The words Mattermost's server reads as mentions of a whole channel (its word rule). */
function channelMentions(message: string): string[] {
  return message
    .split(/[^\p{L}\p{N}:._@-]+/u)
    .map((word) => word.replace(/[.:_-]+$/, '').toLowerCase())
    .filter((word) => word === '@channel' || word === '@all' || word === '@here');
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

  it('Mattermost: @channel, @ALL and @here. in the reply notify no one, and read the same', async () => {
    const message = 'URGENT @channel @ALL @here. read this, cc @ada';
    const { text } = await products.delivered('mattermost', message);
    expect(channelMentions(text)).toEqual([]);
    expect(text.replaceAll('\u200b', '')).toContain(message);
    // A person named in the reply is still mentioned.
    expect(text).toContain(' @ada');
  });
});

describe('withoutChannelMentions', () => {
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

  it('leaves no word Mattermost reads as a channel-wide mention, and changes nothing else', () => {
    fc.assert(
      fc.property(texts, (text) => {
        const out = withoutChannelMentions(text);
        expect(channelMentions(out)).toEqual([]);
        expect(out.replaceAll('\u200b', '')).toBe(text);
      }),
    );
  });
});
