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
import { query, waitFor } from './helpers/runtime.ts';
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

/**
 * A slack stand-in recording (recipient, first letter); part `b` is refused once. With `moved`,
 * the first part answers that the chat moved there, and `atB` runs before part `b` is looked at.
 */
function standIn(options: { moved?: string; atB?: () => Promise<void> } = {}) {
  const sent: Array<[string, string]> = [];
  let refused = false;
  const adapter = {
    id: 'slack',
    maxLength: 100,
    checkRecipient: () => null,
    async send(to: string, text: string) {
      if (text.startsWith('b') && !refused) {
        await options.atB?.();
        refused = true;
        return { status: 'retry' as const, reason: 'rate limited' };
      }
      sent.push([to, text.slice(0, 1)]);
      if (text.startsWith('a') && options.moved)
        return { status: 'sent' as const, movedTo: options.moved };
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

  it('progress kept after a part remembers a chat the product moved (a crash then resumes there)', async () => {
    const { accept, runtime: store, dir } = await stores();
    const NEW = 'C0555555555';
    const seen: Array<string | undefined> = [];
    const action: AgentAction = { ...agentAction('hook:moved'), deliver: true };
    await accept([action]);
    const { adapters } = standIn({
      moved: NEW,
      // What a crash at this point would leave in the store.
      atB: async () => {
        seen.push((await store.run(action.id))?.outcome?.delivery?.recipient);
      },
    });
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
    const [row] = await store.claimHeads(1, new Set());
    if (!row) throw new Error('not claimed');
    await deliver(row, action, REPLY);
    expect(seen).toEqual([NEW]);

    // The same for a heartbeat reply (a second stand-in: its part b is refused once too).
    const heartbeatSeen: Array<string | undefined> = [];
    const second = standIn({
      moved: NEW,
      atB: async () => {
        heartbeatSeen.push(
          query(dir, 'SELECT recipient FROM heartbeat_deliveries')[0]?.['recipient'] as
            | string
            | undefined,
        );
      },
    });
    const delivery = createHeartbeatDelivery({
      store,
      adapters: second.adapters,
      settings: {
        mainKey: 'main',
        retry: { maxAttempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
        lastRoute: compileLastRoutePolicy(
          { pinLastRoute: false, ownerRoutes: [] },
          second.adapters,
        ),
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
    expect(heartbeatSeen).toEqual([NEW]);
  });
});
