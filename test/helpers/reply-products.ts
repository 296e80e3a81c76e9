/**
 * A hookgate with its runtime and the test agent (which quotes the message
 * in its reply), delivering to stand-ins of Telegram, Discord, Slack and
 * Mattermost that answer as the products do: what each product got for one
 * `/hooks/agent` request with `deliver`, for the tests of what a reply may
 * make a product do.
 */
import path from 'node:path';
import { expect } from 'vitest';
import { startTestServer, type TestServer, tempDir } from './hookgate.ts';
import { agentRunner, waitFor } from './runtime.ts';
import { type StandIn, type StandInReply, startStandIn } from './stand-in.ts';

/** Where each product's requests land on the stand-in, and the field its text is in. */
export const PRODUCTS = {
  telegram: { to: '123456789', prefix: '/tg/', text: 'text' },
  discord: { to: '123456789012345678', prefix: '/dc/', text: 'content' },
  slack: { to: 'C0123456789', prefix: '/sl/', text: 'text' },
  mattermost: { to: 'abcdefghijklmnopqrstuvwxyz', prefix: '/mm/', text: 'message' },
} as const;

export type Product = keyof typeof PRODUCTS;

function answer(url: string): StandInReply {
  if (url.startsWith('/tg/')) return { status: 200, body: { ok: true, result: { message_id: 7 } } };
  if (url.startsWith('/dc/')) return { status: 200, body: { id: '1100000000000000000' } };
  if (url.startsWith('/sl/'))
    return { status: 200, body: { ok: true, channel: 'C0123456789', ts: '1712345999.000100' } };
  return { status: 201, body: { id: 'p0000000000000000000000001' } };
}

export type ReplyProducts = {
  /** The body `product` got for a run asked with `message`, and the text field of it. */
  delivered(
    product: Product,
    message: string,
  ): Promise<{ body: Record<string, unknown>; text: string }>;
  close(): Promise<void>;
};

/** Start the stand-in and the server, with the given products configured. */
export async function startReplyProducts(products: readonly Product[]): Promise<ReplyProducts> {
  const standIn: StandIn = await startStandIn((req) => answer(req.url));
  const temp = tempDir();
  const base = standIn.url;
  const settings: Record<Product, Record<string, string>> = {
    telegram: { botToken: '123:replies', baseUrl: `${base}/tg` },
    discord: { botToken: 'discord-replies', baseUrl: `${base}/dc` },
    slack: { botToken: 'xoxb-replies', baseUrl: `${base}/sl` },
    mattermost: { url: `${base}/mm`, token: 'mm-replies' },
  };
  const server: TestServer = await startTestServer(
    {
      channels: Object.fromEntries(products.map((product) => [product, settings[product]])),
      runtime: { heartbeat: { every: 'off' } },
      agents: { defaults: { runner: agentRunner(path.join(temp.dir, 'record.jsonl')) } },
    },
    { runtime: true, dataDir: temp.dir },
  );
  return {
    async delivered(product, message) {
      const { to, prefix, text } = PRODUCTS[product];
      const before = standIn.requests.length;
      const res = await server.post('agent', {
        message,
        channel: product,
        to,
        deliver: true,
        name: 'Alert',
      });
      expect(res.status).toBe(200);
      const request = await waitFor(`the ${product} post`, () =>
        standIn.requests.slice(before).find((r) => r.url.startsWith(prefix)),
      );
      const body = request.json as Record<string, unknown>;
      return { body, text: String(body[text]) };
    },
    async close() {
      await server.stop();
      await standIn.close();
      temp.cleanup();
    },
  };
}
