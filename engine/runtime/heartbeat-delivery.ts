/**
 * Delivering a heartbeat's reply: to the main session's last route, once,
 * what did not go out retried by the runtime's retry policy (in memory: a
 * restart ends it); the outcome recorded, the last route moved where the
 * policy lets a heartbeat move it, and a failure noted in the main session
 * (the product's reason wrapped, as everything hookgate did not write).
 */
import type { ChannelAdapter } from '../delivery/adapter.ts';
import { resolveRoute, sendParts } from '../delivery/deliver.ts';
import type { Logger } from '../log.ts';
import { wrapUntrusted } from '../safety.ts';
import { recordDelivery } from './delivery-records.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { retryDelayMs } from './replies.ts';
import { moveLastRoute } from './route-moves.ts';
import type { RuntimeStore } from './runtime-store.ts';

export type HeartbeatDeliveryDeps = {
  store: RuntimeStore;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  settings: {
    mainKey: string;
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    lastRoute: LastRoutePolicy;
  };
  logger: Logger;
  signal: AbortSignal;
  /** True once the heartbeat stopped: nothing more is sent. */
  stopped: () => boolean;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
};

/** Create the delivery of heartbeat replies: `deliver(heartbeatId, reply)`. */
export function createHeartbeatDelivery(
  deps: HeartbeatDeliveryDeps,
): (id: string, reply: string) => Promise<void> {
  const { store, settings, logger } = deps;
  async function deliver(id: string, reply: string, attempts = 1, partsSent = 0): Promise<void> {
    if (deps.stopped()) return;
    const route = resolveRoute(
      { channel: 'last', fallback: false },
      await store.lastRoute(settings.mainKey),
      deps.adapters,
    );
    const base = { source: 'heartbeat' as const, sourceId: id, text: reply, attempts };
    if ('skipped' in route) {
      const error = route.skipped;
      await recordDelivery(store, {
        ...base,
        channel: 'last',
        state: 'skipped',
        parts: 0,
        partsSent: 0,
        error,
      });
      logger.warn({ heartbeatId: id, reason: error }, 'heartbeat delivery skipped');
      return;
    }
    const attempt = await sendParts(route, reply, partsSent, () => undefined, deps.signal);
    const target = {
      channel: route.channel,
      recipient: attempt.recipient,
      parts: attempt.parts,
      partsSent: attempt.partsSent,
    };
    if (attempt.outcome === 'sent') {
      const delivered = { channel: route.channel, recipient: attempt.recipient };
      await moveLastRoute(deps, { source: 'heartbeat', attempted: route, delivered });
      await recordDelivery(store, {
        ...base,
        ...target,
        state: 'sent',
        ...(attempt.reason !== undefined && { error: attempt.reason }),
      });
      return;
    }
    const reason = attempt.reason ?? 'unknown';
    // What did not go out is tried again by the same policy as agent runs (in memory: a restart ends it).
    if (attempt.outcome === 'retry' && attempts < settings.retry.maxAttempts && !deps.stopped()) {
      const delay = retryDelayMs(attempts, settings.retry, attempt.retryAfterMs);
      const again = () => {
        deliver(id, reply, attempts + 1, attempt.partsSent).catch((err: unknown) =>
          logger.error({ err: (err as Error).message }, 'heartbeat delivery crashed'),
        );
      };
      setTimeout(again, delay).unref();
      return;
    }
    await recordDelivery(store, {
      ...base,
      ...target,
      state: attempt.outcome === 'retry' ? 'dead' : 'failed',
      error: reason,
    });
    logger.warn({ heartbeatId: id, channel: route.channel, reason }, 'heartbeat delivery failed');
    // The reason carries the product's answer: wrapped, as everything not written by hookgate.
    await store.addEvent({
      sessionKey: settings.mainKey,
      text: `Heartbeat reply could not be delivered to ${route.channel}:\n${wrapUntrusted(reason.slice(0, 1000), 'Delivery error').text}`,
      source: 'delivery',
      trusted: false,
    });
  }
  return (id, reply) => deliver(id, reply);
}
