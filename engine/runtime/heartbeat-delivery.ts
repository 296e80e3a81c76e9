/**
 * Delivering heartbeat replies: to the main session's last route, once,
 * what did not go out retried by the runtime's retry policy. The delivery
 * lives in the store until it is over (the heartbeat's end records it as due,
 * each attempt is claimed, its parts kept as they go out), so a restart or a
 * new leader resumes it; only the leading instance sends. The outcome is
 * recorded, the last route moved where the policy lets a heartbeat move it,
 * and a failure noted in the main session (the product's reason wrapped, as
 * everything hookgate did not write).
 */
import type { ChannelAdapter } from '../delivery/adapter.ts';
import { resolveRoute, sendParts } from '../delivery/deliver.ts';
import type { Logger } from '../log.ts';
import { wrapUntrusted } from '../safety.ts';
import { deliveryRecorded } from './delivery-records.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { retryDelayMs } from './replies.ts';
import { moveLastRoute } from './route-moves.ts';
import type {
  DeliveryRecord,
  HeartbeatDeliveryClaim,
  NewEvent,
  RuntimeStore,
} from './runtime-store.ts';

/** How many pending deliveries a resume reads per query. */
const RESUME_PAGE = 500;

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
  /** True once the heartbeat stopped: no attempt starts (the store keeps the delivery due). */
  stopped: () => boolean;
  /** Whether this instance leads (only the leader delivers); always where one process owns the store. */
  leading?: () => boolean;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
};

export type HeartbeatDelivery = {
  /** Deliver the reply of a heartbeat whose end recorded it as due; resolves after the first attempt. */
  deliver(id: string): Promise<void>;
  /** Schedule every reply the store still has to deliver (at start, or when the lead is gained). */
  resume(): Promise<void>;
  /** Cancel the scheduled retries (they stay due in the store). */
  stop(): void;
};

/** Create the delivery of heartbeat replies. */
export function createHeartbeatDelivery(deps: HeartbeatDeliveryDeps): HeartbeatDelivery {
  const { store, settings, logger } = deps;
  // Shutdown aborts the signal first, then stops the heartbeat: either means no new attempt.
  const halted = () => deps.stopped() || deps.signal.aborted;
  // One timer per reply waiting for its next attempt, so a resume never schedules one twice.
  const timers = new Map<string, NodeJS.Timeout>();

  function schedule(id: string, atMs: number): void {
    if (halted() || timers.has(id)) return;
    const timer = setTimeout(
      () => {
        timers.delete(id);
        attempt(id).catch((err: unknown) =>
          logger.error({ err: (err as Error).message }, 'heartbeat delivery crashed'),
        );
      },
      Math.max(0, atMs - Date.now()),
    );
    timer.unref();
    timers.set(id, timer);
  }

  async function attempt(id: string): Promise<void> {
    // The leader delivers; one that lost the lead leaves the reply due for the next leader.
    if (halted() || (deps.leading && !deps.leading())) return;
    const claim = await store.claimHeartbeatDelivery(id, Date.now());
    // Not due, in flight elsewhere, or over.
    if (!claim) return;
    const route = resolveRoute(
      { channel: 'last', fallback: false },
      await store.lastRoute(settings.mainKey),
      deps.adapters,
    );
    const base = {
      source: 'heartbeat' as const,
      sourceId: id,
      text: claim.reply,
      attempts: claim.attempts,
    };
    if ('skipped' in route) {
      const error = route.skipped;
      await end(claim, {
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
    // A write refused mid-send means another instance took the attempt over: no more parts.
    const lost = new AbortController();
    const result = await sendParts(
      route,
      claim.reply,
      claim.partsSent,
      async (sent) => {
        if (!(await store.saveHeartbeatDelivery(claim, sent))) lost.abort();
      },
      AbortSignal.any([deps.signal, lost.signal]),
    );
    const target = {
      channel: route.channel,
      recipient: result.recipient,
      parts: result.parts,
      partsSent: result.partsSent,
    };
    if (lost.signal.aborted) {
      logger.warn({ heartbeatId: id }, 'heartbeat delivery taken over: no more parts sent');
      return;
    }
    if (result.outcome === 'sent') {
      const delivered = { channel: route.channel, recipient: result.recipient };
      await moveLastRoute(deps, { source: 'heartbeat', attempted: route, delivered });
      await end(claim, {
        ...base,
        ...target,
        state: 'sent',
        ...(result.reason !== undefined && { error: result.reason }),
      });
      return;
    }
    const reason = result.reason ?? 'unknown';
    if (result.outcome === 'retry' && halted()) {
      // Interrupted by shutdown: due again at once for the next start, the attempt not counted.
      await store.saveHeartbeatDelivery(claim, result.partsSent, {
        atMs: Date.now(),
        refund: true,
      });
      return;
    }
    if (result.outcome === 'retry' && claim.attempts < settings.retry.maxAttempts) {
      // Whole milliseconds: the delay has jitter, and PostgreSQL keeps the time as bigint.
      const atMs = Math.ceil(
        Date.now() + retryDelayMs(claim.attempts, settings.retry, result.retryAfterMs),
      );
      if (await store.saveHeartbeatDelivery(claim, result.partsSent, { atMs })) schedule(id, atMs);
      return;
    }
    await end(
      claim,
      { ...base, ...target, state: result.outcome === 'retry' ? 'dead' : 'failed', error: reason },
      {
        sessionKey: settings.mainKey,
        // The reason carries the product's answer: wrapped, as everything not written by hookgate.
        text: `Heartbeat reply could not be delivered to ${route.channel}:\n${wrapUntrusted(reason.slice(0, 1000), 'Delivery error').text}`,
        source: 'delivery',
        trusted: false,
      },
    );
    logger.warn({ heartbeatId: id, channel: route.channel, reason }, 'heartbeat delivery failed');
  }

  /** The final record (and a failure's note), if the attempt is still this instance's. */
  async function end(claim: HeartbeatDeliveryClaim, record: DeliveryRecord, note?: NewEvent) {
    if (await store.endHeartbeatDelivery(claim, record, note)) deliveryRecorded(record);
    else logger.warn({ heartbeatId: claim.id }, 'heartbeat delivery taken over: not recorded here');
  }

  return {
    deliver: attempt,
    async resume() {
      let after: string | undefined;
      for (;;) {
        const page = await store.pendingHeartbeatDeliveries(RESUME_PAGE, after);
        for (const pending of page) schedule(pending.id, pending.dueAtMs);
        if (page.length < RESUME_PAGE) return;
        after = page[page.length - 1]?.id;
      }
    },
    stop() {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
