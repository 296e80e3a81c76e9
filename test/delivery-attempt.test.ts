/**
 * The one delivery attempt every reply goes through (an agent run's and a
 * heartbeat's): what it sends, where, and which of its ledger's steps it
 * takes next (retry, hand back, end) for each way a send can go. Over the
 * real SQLite store's routes, a stand-in product (answers chosen per part)
 * and a ledger that records what it was told.
 */
import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChannelAdapter, SendResult } from '../engine/delivery/adapter.ts';
import { checkSlackRecipient } from '../engine/delivery/adapters/slack.ts';
import { MAX_MOVED_RECIPIENT_LENGTH } from '../engine/delivery/deliver.ts';
import {
  attemptDelivery,
  type DeliveryJob,
  type DeliveryLedger,
  type SentParts,
} from '../engine/runtime/delivery-attempt.ts';
import { compileLastRoutePolicy } from '../engine/runtime/last-route.ts';
import type { DeliveryRecord } from '../engine/runtime/runtime-store.ts';
import { openSqliteStores, type SqliteStores } from './helpers/sqlite-stores.ts';

const LAST = 'C0000000001';
const ASKED = 'C0000000002';
// Three parts of a 100-character limit.
const REPLY = ['a', 'b', 'c'].map((c) => c.repeat(90)).join(' ');
const RETRY = { maxAttempts: 3, baseDelayMs: 1_000, maxDelayMs: 60_000 };

let stores: SqliteStores;
beforeAll(async () => {
  stores = await openSqliteStores('hookgate-delivery-attempt-');
});
afterAll(async () => {
  await stores.close();
});

/** A slack stand-in: part i gets answers[i] (sent when there is none); records (to, letter). */
function product(
  answers: SendResult[] = [],
  checkRecipient: (to: string) => string | null = () => null,
) {
  const sent: Array<[string, string]> = [];
  let part = 0;
  const adapter = {
    id: 'slack',
    maxLength: 100,
    checkRecipient,
    async send(to: string, text: string) {
      const answer = answers[part++] ?? { status: 'sent' as const };
      if (answer.status === 'sent') sent.push([to, text.slice(0, 1)]);
      return answer;
    },
  };
  return { sent, adapters: new Map([['slack', adapter as unknown as ChannelAdapter]]) };
}

/** A ledger that records each step it is told, in order. */
function recorder(options: { begin?: boolean; lost?: boolean } = {}) {
  const told: Array<
    | { step: 'begin' | 'progress' | 'refund'; at: SentParts }
    | { step: 'retry'; at: SentParts; delayMs: number }
    | { step: 'end'; record: DeliveryRecord }
  > = [];
  const ledger: DeliveryLedger = {
    async begin(at) {
      told.push({ step: 'begin', at: structuredClone(at) });
      return options.begin ?? true;
    },
    async progress(at) {
      told.push({ step: 'progress', at: structuredClone(at) });
    },
    lost: () => options.lost ?? false,
    async retry(at, delayMs) {
      told.push({ step: 'retry', at: structuredClone(at), delayMs });
      return true;
    },
    async refund(at) {
      told.push({ step: 'refund', at: structuredClone(at) });
    },
    async end(record) {
      told.push({ step: 'end', record });
    },
  };
  return { told, ledger, last: () => told.at(-1) };
}

async function attempt(
  adapters: ReadonlyMap<string, ChannelAdapter>,
  ledger: DeliveryLedger,
  job: Partial<DeliveryJob> = {},
  recipientAllowed?: (channel: string, to: string) => boolean,
  logger = pino({ level: 'silent' }),
) {
  await stores.runtime.setRoute('main', 'slack', LAST);
  await attemptDelivery(
    {
      store: stores.runtime,
      adapters,
      logger,
      settings: {
        mainKey: 'main',
        retry: RETRY,
        lastRoute: compileLastRoutePolicy({ pinLastRoute: false, ownerRoutes: [] }, adapters),
        ...(recipientAllowed && { recipientAllowed }),
      },
    },
    {
      source: 'hook',
      sourceId: 'run-1',
      reply: REPLY,
      request: { channel: 'last', fallback: false },
      attempts: 1,
      partsSent: 0,
      signal: new AbortController().signal,
      halted: () => false,
      ...job,
    },
    ledger,
  );
}

describe('what the log says of a delivery that ends unsent', () => {
  it.each([
    ['out of retries: gave up (dead, as its record and the run say)', 'retry', 'delivery gave up'],
    ['refused for good: failed', 'failed', 'delivery failed'],
  ] as const)('%s', async (_name, status, msg) => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino(
      { level: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const { adapters } = product([{ status, reason: 'HTTP 500' }]);
    const run = recorder();
    await attempt(adapters, run.ledger, { attempts: RETRY.maxAttempts }, undefined, logger);
    expect(lines.map((line) => line['msg'])).toContain(msg);
  });
});

describe('one delivery attempt', () => {
  it('sends every part to the last route, keeps progress after each, ends sent', async () => {
    const { sent, adapters } = product();
    const run = recorder();
    await attempt(adapters, run.ledger);
    expect(sent).toEqual([
      [LAST, 'a'],
      [LAST, 'b'],
      [LAST, 'c'],
    ]);
    expect(run.told.map((entry) => entry.step)).toEqual([
      'begin',
      'progress',
      'progress',
      'progress',
      'end',
    ]);
    expect(run.last()).toEqual({
      step: 'end',
      record: {
        source: 'agent',
        sourceId: 'run-1',
        channel: 'slack',
        recipient: LAST,
        text: REPLY,
        state: 'sent',
        attempts: 1,
        parts: 3,
        partsSent: 3,
      },
    });
  });

  it('a hook reply that asks for a chat goes there and leaves the last route alone', async () => {
    const { sent, adapters } = product();
    await attempt(adapters, recorder().ledger, {
      request: { channel: 'slack', to: ASKED, fallback: false },
    });
    expect(sent.map(([to]) => to)).toEqual([ASKED, ASKED, ASKED]);
    expect(await stores.runtime.lastRoute('main')).toEqual({ channel: 'slack', recipient: LAST });
  });

  it('a heartbeat reply whose chat the product moved: the last route follows the chat', async () => {
    const { adapters } = product([{ status: 'sent', movedTo: ASKED }]);
    await attempt(adapters, recorder().ledger, { source: 'heartbeat', sourceId: 'beat-0' });
    expect(await stores.runtime.lastRoute('main')).toEqual({ channel: 'slack', recipient: ASKED });
  });

  it.each([
    ['not of the channel’s form', '#general; see @evil\u202e'],
    ['of its form but too long', `C${'A'.repeat(MAX_MOVED_RECIPIENT_LENGTH)}`],
  ])(
    'a heartbeat reply whose product says the chat moved to a recipient %s: not followed, the delivery fails, the last route stays',
    async (_, movedTo) => {
      const { sent, adapters } = product([{ status: 'sent', movedTo }], checkSlackRecipient);
      const run = recorder();
      await attempt(adapters, run.ledger, { source: 'heartbeat', sourceId: 'beat-1' });
      expect(sent).toEqual([[LAST, 'a']]);
      expect(await stores.runtime.lastRoute('main')).toEqual({ channel: 'slack', recipient: LAST });
      expect(run.last()).toMatchObject({
        step: 'end',
        record: { state: 'failed', recipient: LAST, partsSent: 1 },
      });
      const error = String((run.last() as { record: DeliveryRecord }).record.error);
      expect(error).toContain('said the chat moved, to a recipient that is not valid for it');
      expect(error).not.toContain(movedTo);
    },
  );

  it('a hook reply whose chat the product moved leaves the last route alone', async () => {
    const { adapters } = product([{ status: 'sent', movedTo: ASKED }]);
    await attempt(adapters, recorder().ledger);
    expect(await stores.runtime.lastRoute('main')).toEqual({ channel: 'slack', recipient: LAST });
  });

  it('a resumed reply sends only the parts left, to the chat of the first ones', async () => {
    const { sent, adapters } = product();
    const run = recorder();
    await attempt(adapters, run.ledger, {
      attempts: 2,
      partsSent: 1,
      target: { channel: 'slack', recipient: ASKED },
    });
    expect(sent).toEqual([
      [ASKED, 'b'],
      [ASKED, 'c'],
    ]);
    expect(run.told[0]).toEqual({
      step: 'begin',
      at: { partsSent: 1, target: { channel: 'slack', recipient: ASKED } },
    });
  });

  it('hooks.allowedRecipients: a reply’s own `to` not listed on the channel `last` resolved to is skipped; the rest of a reply begun is not checked again', async () => {
    const none = () => false;
    const fresh = product();
    const refused = recorder();
    await attempt(
      fresh.adapters,
      refused.ledger,
      { request: { channel: 'last', to: ASKED, fallback: false } },
      none,
    );
    expect(fresh.sent).toEqual([]);
    expect(refused.last()).toMatchObject({
      step: 'end',
      record: { state: 'skipped', error: expect.stringContaining('allowedRecipients.slack') },
    });
    // Its first part went where the door allowed: the rest follows it, whatever the list says now.
    const resumed = product();
    const run = recorder();
    await attempt(
      resumed.adapters,
      run.ledger,
      { attempts: 2, partsSent: 1, target: { channel: 'slack', recipient: ASKED } },
      none,
    );
    expect(resumed.sent).toEqual([
      [ASKED, 'b'],
      [ASKED, 'c'],
    ]);
  });

  it('a part refused for now: retried after a delay of at least the product’s wait', async () => {
    const { adapters } = product([
      { status: 'sent' },
      { status: 'retry', reason: 'rate limited', retryAfterMs: 30_000 },
    ]);
    const run = recorder();
    await attempt(adapters, run.ledger);
    expect(run.last()).toEqual({
      step: 'retry',
      at: { partsSent: 1, parts: 3, target: { channel: 'slack', recipient: LAST } },
      delayMs: 30_000,
    });
  });

  it('a chat the product moved: progress, and what follows, name the new chat', async () => {
    const { adapters } = product([
      { status: 'sent', movedTo: ASKED },
      { status: 'retry', reason: 'rate limited' },
    ]);
    const run = recorder();
    await attempt(adapters, run.ledger);
    expect(run.told[1]).toEqual({
      step: 'progress',
      at: { partsSent: 1, target: { channel: 'slack', recipient: ASKED } },
    });
    expect(run.last()).toMatchObject({ step: 'retry', at: { target: { recipient: ASKED } } });
  });

  it('the reply taken over elsewhere before the first part: nothing sent, nothing ended', async () => {
    const { sent, adapters } = product();
    const run = recorder({ begin: false });
    await attempt(adapters, run.ledger);
    expect(sent).toEqual([]);
    expect(run.told.map((entry) => entry.step)).toEqual(['begin']);
  });

  it('the reply taken over during the send: no end written here', async () => {
    const { adapters } = product([{ status: 'sent' }, { status: 'retry', reason: 'taken' }]);
    const run = recorder({ lost: true });
    await attempt(adapters, run.ledger);
    expect(run.told.map((entry) => entry.step)).toEqual(['begin', 'progress']);
  });

  it('an empty reply and a reply without a route are skipped, with the reason, nothing sent', async () => {
    const { sent, adapters } = product();
    const empty = recorder();
    await attempt(adapters, empty.ledger, { reply: '  \n' });
    const nowhere = recorder();
    await attempt(adapters, nowhere.ledger, {
      request: { channel: 'telegram', to: '42', fallback: false },
    });
    expect(sent).toEqual([]);
    expect(empty.told).toEqual([
      {
        step: 'end',
        record: expect.objectContaining({
          state: 'skipped',
          channel: 'last',
          parts: 0,
          error: 'the reply is empty',
        }),
      },
    ]);
    expect(nowhere.last()).toMatchObject({
      step: 'end',
      record: {
        state: 'skipped',
        channel: 'telegram',
        error: 'channel "telegram" is not configured',
      },
    });
  });

  it('a heartbeat’s reply is recorded as the heartbeat’s', async () => {
    const { adapters } = product();
    const run = recorder();
    await attempt(adapters, run.ledger, { source: 'heartbeat', sourceId: 'beat-1' });
    expect(run.last()).toMatchObject({
      step: 'end',
      record: { source: 'heartbeat', sourceId: 'beat-1', state: 'sent' },
    });
  });
});

describe('what follows a send, for any answers, attempt and shutdown', () => {
  const answer = fc.oneof(
    fc.constant<SendResult>({ status: 'sent' }),
    fc.constant<SendResult>({ status: 'retry', reason: 'busy' }),
    fc.constant<SendResult>({ status: 'failed', reason: 'no such chat' }),
  );

  it('exactly one next step: end sent, retry, hand back, end dead or end failed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(answer, { maxLength: 3 }),
        fc.integer({ min: 1, max: RETRY.maxAttempts + 1 }),
        fc.boolean(),
        async (answers, attempts, halted) => {
          const { adapters } = product(answers);
          const run = recorder();
          await attempt(adapters, run.ledger, { attempts, halted: () => halted });
          const first = answers.findIndex((a) => a.status !== 'sent');
          const stop = first === -1 || first >= 3 ? undefined : answers[first];
          const next = run.told.filter(
            (entry) => entry.step !== 'begin' && entry.step !== 'progress',
          );
          expect(next).toHaveLength(1);
          const [step] = next;
          if (!stop) expect(step).toMatchObject({ step: 'end', record: { state: 'sent' } });
          else if (stop.status === 'failed')
            expect(step).toMatchObject({ step: 'end', record: { state: 'failed' } });
          else if (halted) expect(step).toMatchObject({ step: 'refund' });
          else if (attempts < RETRY.maxAttempts) expect(step).toMatchObject({ step: 'retry' });
          else expect(step).toMatchObject({ step: 'end', record: { state: 'dead' } });
          // Progress was kept for exactly the parts that went out.
          const kept = run.told.filter((entry) => entry.step === 'progress');
          expect(kept.length).toBe(stop ? first : 3);
        },
      ),
      { numRuns: 60 },
    );
  });
});
