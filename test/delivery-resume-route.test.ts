/**
 * A reply whose parts went out over several attempts ends where it began:
 * when the main session's last route moves between two attempts (a
 * heartbeat reply or a hook run's reply to `last`), the remaining parts go
 * to the chat that got the first ones, never split across two chats. The
 * delivery steps over the real SQLite store with a stand-in adapter whose
 * second part fails once.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelAdapter } from '../engine/delivery/adapter.ts';
import { createLogger } from '../engine/log.ts';
import { createHeartbeatDelivery } from '../engine/runtime/heartbeat-delivery.ts';
import { compileLastRoutePolicy } from '../engine/runtime/last-route.ts';
import { createDeliveryStep } from '../engine/runtime/reply-delivery.ts';
import type { AgentAction } from '../schemas/action.ts';
import { NO_HEARTBEAT } from './helpers/heartbeat.ts';
import { waitFor } from './helpers/runtime.ts';
import { openSqliteStores } from './helpers/sqlite-stores.ts';
import { agentAction } from './runtime-store-contract.ts';

const FIRST = 'C0123456789';
const MOVED = 'C0999999999';
// Three parts of a 100-character limit.
const REPLY = ['a', 'b', 'c'].map((c) => c.repeat(90)).join(' ');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A slack stand-in recording (recipient, first letter); part `b` is refused once. */
function standIn() {
  const sent: Array<[string, string]> = [];
  let refused = false;
  const adapter = {
    id: 'slack',
    maxLength: 100,
    checkRecipient: () => null,
    async send(to: string, text: string) {
      if (text.startsWith('b') && !refused) {
        refused = true;
        return { status: 'retry' as const, reason: 'rate limited' };
      }
      sent.push([to, text.slice(0, 1)]);
      return { status: 'sent' as const };
    },
  };
  return { sent, adapters: new Map([['slack', adapter as unknown as ChannelAdapter]]) };
}

async function stores() {
  const opened = await openSqliteStores('hookgate-resume-route-');
  cleanups.push(() => opened.close());
  await opened.runtime.setRoute('main', 'slack', FIRST);
  return opened;
}

describe('a reply resumed after the last route moved', () => {
  it('a hook run: the remaining parts go to the chat of the first ones', async () => {
    const { accept, runtime: store } = await stores();
    const { sent, adapters } = standIn();
    const action: AgentAction = { ...agentAction('hook:resume'), deliver: true };
    await accept([action]);
    const deliver = createDeliveryStep({
      store,
      adapters,
      heartbeat: NO_HEARTBEAT,
      logger: pino({ level: 'silent' }),
      settings: {
        mainKey: 'main',
        retry: { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 1 },
        lastRoute: compileLastRoutePolicy({ pinLastRoute: false, ownerRoutes: [] }, adapters),
      },
      signal: new AbortController().signal,
      stopped: () => false,
      kick: () => undefined,
    });
    const [first] = await store.claimHeads(1, new Set());
    if (!first) throw new Error('not claimed');
    await deliver(first, action, REPLY);
    // The owner's chat moved before the retry.
    await store.setRoute('main', 'slack', MOVED);
    const again = await waitFor('the retry to be due', async () => {
      const [row] = await store.claimHeads(1, new Set());
      return row;
    });
    await deliver(again, action, REPLY);
    expect(sent).toEqual([
      [FIRST, 'a'],
      [FIRST, 'b'],
      [FIRST, 'c'],
    ]);
    expect((await store.run(action.id))?.state).toBe('done');
  });

  it('a heartbeat reply: the remaining parts go to the chat of the first ones', async () => {
    const { runtime: store } = await stores();
    const { sent, adapters } = standIn();
    const delivery = createHeartbeatDelivery({
      store,
      adapters,
      settings: {
        mainKey: 'main',
        retry: { maxAttempts: 5, baseDelayMs: 200, maxDelayMs: 200 },
        lastRoute: compileLastRoutePolicy({ pinLastRoute: false, ownerRoutes: [] }, adapters),
        leaseMs: 30_000,
      },
      logger: createLogger('silent'),
      signal: new AbortController().signal,
      stopped: () => false,
    });
    cleanups.push(() => delivery.stop());
    const beat = await store.startHeartbeat('wake');
    await store.finishHeartbeat(beat, {
      state: 'done',
      events: [],
      reply: REPLY,
      ack: false,
      deliver: true,
    });
    await delivery.deliver(beat);
    expect(sent).toEqual([[FIRST, 'a']]);
    // The owner's chat moved before the retry.
    await store.setRoute('main', 'slack', MOVED);
    await waitFor('the rest of the reply', () => sent.length === 3);
    expect(sent).toEqual([
      [FIRST, 'a'],
      [FIRST, 'b'],
      [FIRST, 'c'],
    ]);
  });
});
