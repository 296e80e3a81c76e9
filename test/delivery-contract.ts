/**
 * The contract every channel adapter passes, against a stand-in of its
 * product's API: recipient checks, a successful send with the text and
 * recipient where the product expects them, and the product's own error
 * shapes mapped to retry (rate limit with its wait hint, 5xx, connection
 * errors) or failure (auth, unknown recipient), without secrets in reasons.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdapterFactory, ChannelAdapter, SendResult } from '../engine/delivery/adapter.ts';
import type { ChannelId } from '../schemas/config.ts';
import {
  type RecordedRequest,
  type StandIn,
  type StandInReply,
  startStandIn,
} from './helpers/stand-in.ts';

/** The product answers a test asks the stand-in to give. */
export type Mode = 'ok' | 'rate_limited' | 'server_error' | 'auth_failed' | 'bad_recipient';

export type AdapterCase = {
  id: ChannelId;
  factory: AdapterFactory;
  /** Settings pointing the adapter at the stand-in. */
  settings: (baseUrl: string) => Record<string, unknown>;
  validRecipients: string[];
  invalidRecipients: string[];
  /** The product's documented answer for each mode. */
  reply: (mode: Mode, req: RecordedRequest) => StandInReply;
  /** The text and recipient as the product received them. */
  sent: (req: RecordedRequest) => { text: string; to: string };
  /** The wait, in ms, that the `rate_limited` reply asks for. */
  rateLimitMs: number;
  /** Secret values in the settings that must never appear in a reason. */
  secrets: string[];
};

/** Register the shared adapter suite. */
export function describeAdapterContract(c: AdapterCase): void {
  describe(`channel adapter contract: ${c.id}`, () => {
    let standIn: StandIn;
    let adapter: ChannelAdapter;
    let mode: Mode = 'ok';
    beforeAll(async () => {
      standIn = await startStandIn((req) => c.reply(mode, req));
      adapter = c.factory(c.settings(standIn.url));
    });
    afterAll(() => standIn.close());

    const send = async (m: Mode, text = 'Hello from hookgate') => {
      mode = m;
      const before = standIn.requests.length;
      const to = c.validRecipients[0] as string;
      const result = await adapter.send(adapter.normaliseRecipient?.(to) ?? to, text);
      return { result, requests: standIn.requests.slice(before) };
    };

    it('has its id and a sane part length', () => {
      expect(adapter.id).toBe(c.id);
      expect(adapter.maxLength).toBeGreaterThanOrEqual(1000);
    });

    it.each(c.validRecipients)('accepts the recipient %j', (to) => {
      expect(adapter.checkRecipient(to)).toBeNull();
    });

    it.each(c.invalidRecipients)('refuses the recipient %j with a reason', (to) => {
      expect(adapter.checkRecipient(to)).toEqual(expect.any(String));
    });

    it('sends the text to the recipient', async () => {
      const { result, requests } = await send('ok', 'Build 17 passed ✅');
      expect(result.status).toBe('sent');
      expect(requests).toHaveLength(1);
      const received = c.sent(requests[0] as RecordedRequest);
      expect(received.text).toBe('Build 17 passed ✅');
      expect(received.to).toContain(String(c.validRecipients[0]).replace(/^\+/, ''));
    });

    it("maps a rate limit to retry with the product's wait hint", async () => {
      const { result } = await send('rate_limited');
      expect(result).toMatchObject({ status: 'retry' });
      expect((result as { retryAfterMs?: number }).retryAfterMs).toBe(c.rateLimitMs);
    });

    it('maps a server error to retry', async () => {
      expect((await send('server_error')).result.status).toBe('retry');
    });

    it.each(['auth_failed', 'bad_recipient'] as const)(
      'maps %s to a permanent failure without secrets',
      async (m) => {
        const { result } = await send(m);
        expect(result.status).toBe('failed');
        const reason = (result as { reason: string }).reason;
        expect(reason.length).toBeGreaterThan(0);
        for (const secret of c.secrets) expect(reason).not.toContain(secret);
      },
    );

    it('maps a connection error to retry', async () => {
      const gone = c.factory(c.settings('http://127.0.0.1:9'));
      const to = c.validRecipients[0] as string;
      const result = await gone.send(gone.normaliseRecipient?.(to) ?? to, 'x');
      expect(result.status).toBe('retry');
      for (const secret of c.secrets) expect(JSON.stringify(result)).not.toContain(secret);
    });
  });
}

/**
 * Inside a describe: a stand-in that gives whatever answer a test asks for, and a
 * `send` that also checks the result carries neither a secret nor the message text.
 */
export function useAnswerProbe(
  makeAdapter: (baseUrl: string) => ChannelAdapter,
  to: string,
  secrets: string[],
): (answer: StandInReply) => Promise<SendResult> {
  let standIn: StandIn;
  let next: StandInReply;
  let adapter: ChannelAdapter;
  beforeAll(async () => {
    standIn = await startStandIn(() => next);
    adapter = makeAdapter(standIn.url);
  });
  afterAll(() => standIn.close());
  return async function send(answer) {
    next = answer;
    const result = await adapter.send(to, 'secret message text');
    for (const secret of [...secrets, 'secret message text']) {
      expect(JSON.stringify(result)).not.toContain(secret);
    }
    return result;
  };
}
