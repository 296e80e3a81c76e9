/**
 * Delivering an agent run's reply, as a step of the worker: route, send the
 * parts (resuming after those already sent), retry what did not go out by
 * the retry policy, record the session's last route, and once the
 * delivery's outcome is final, record it with the run's end and summary.
 */
import type { AgentAction } from '../../schemas/action.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import { resolveRoute, sendParts } from '../delivery/deliver.ts';
import type { Logger } from '../log.ts';
import type { Heartbeat } from './heartbeat.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { retryDelayMs, summaryText } from './replies.ts';
import { moveLastRoute } from './route-moves.ts';
import type {
  DeliveryProgress,
  DeliveryRecord,
  Outcome,
  RunRow,
  RunTurns,
  RuntimeStore,
} from './runtime-store.ts';
import { deliveryRecorded, recordDelivery } from './delivery-records.ts';

/** The summary event of an agent run (wrapped: it carries the run's reply), with an optional note. */
export function summaryEvent(
  mainKey: string,
  action: AgentAction,
  status: 'ok' | 'error' | 'timeout',
  text: string,
  note?: string,
) {
  return {
    sessionKey: mainKey,
    text: summaryText(action.name, { status, text }, note),
    source: 'hook-summary',
    actionId: action.id,
    // The reply of an agent to request content is second-order input, even for a trusted mapping.
    trusted: false,
  };
}

/**
 * Ask for a run's last write (its end or its requeue), then say so through `ended`: the write
 * is queued first, so what `ended` asks for (the session's next run) comes after it.
 */
export function lastWrite<T>(write: Promise<T>, ended: () => void): Promise<T> {
  ended();
  return write;
}

/** What the delivery step needs from the worker. */
export type DeliveryStepDeps = {
  store: RuntimeStore;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  heartbeat: Heartbeat;
  logger: Logger;
  settings: {
    mainKey: string;
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    lastRoute: LastRoutePolicy;
  };
  signal: AbortSignal;
  /** True once the worker is stopping (an interrupted delivery goes back to the queue). */
  stopped: () => boolean;
  /** Look for work again (after a retry delay). */
  kick: () => void;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
};

/** Create the delivery step of the worker. */
export function createDeliveryStep(deps: DeliveryStepDeps) {
  const { store, adapters, heartbeat, logger, settings } = deps;
  /**
   * Deliver a reply (resuming after the parts already sent); the summary follows the final
   * outcome. `turns`: a fresh reply's turns, written with the first progress saved (or with the
   * end), so a crash before that runs the turn again without having kept its turns. `ended`
   * is called once the run's last write (its end or its requeue) is asked.
   */
  return async function deliverReply(
    row: RunRow,
    action: AgentAction,
    reply: string,
    turns?: RunTurns,
    ended: () => void = () => undefined,
  ): Promise<void> {
    const previous = row.outcome?.delivery;
    // The rest of a reply goes where its first parts went, whatever the last route is now.
    const resumed =
      (previous?.partsSent ?? 0) > 0 &&
      previous?.channel !== undefined &&
      previous.recipient !== undefined
        ? { channel: previous.channel, to: previous.recipient, fallback: false }
        : undefined;
    const route = resolveRoute(
      resumed ?? {
        channel: action.channel,
        ...(action.to !== undefined && { to: action.to }),
        fallback: action.mappingId !== undefined,
      },
      await store.lastRoute(settings.mainKey),
      adapters,
    );
    const attempts = (previous?.attempts ?? 0) + 1;
    // A delivery's final record, written with the run's end.
    const record = (
      state: 'sent' | 'failed' | 'skipped' | 'dead',
      detail: {
        channel: string;
        recipient?: string;
        parts: number;
        partsSent: number;
        reason?: string;
      },
    ): DeliveryRecord => ({
      source: 'agent',
      sourceId: action.id,
      channel: detail.channel,
      ...(detail.recipient !== undefined && { recipient: detail.recipient }),
      text: reply,
      state,
      attempts,
      parts: detail.parts,
      partsSent: detail.partsSent,
      ...(detail.reason !== undefined && { error: detail.reason }),
    });
    // The turns until the first saved progress has written them.
    let unsaved = turns;
    const finishWith = async (
      state: 'done' | 'failed' | 'dead',
      delivery: DeliveryProgress,
      recorded: DeliveryRecord,
      note?: string,
    ) => {
      const finished = await lastWrite(
        store.finish(
          row,
          state,
          { status: 'ok', reply, delivery },
          summaryEvent(settings.mainKey, action, 'ok', reply, note),
          unsaved,
          recorded,
        ),
        ended,
      );
      // Taken over elsewhere (its lease expired): what this instance did is still on record.
      if (finished) deliveryRecorded(recorded);
      else await recordDelivery(store, recorded);
      if (action.wakeMode === 'now') heartbeat.requestNow('hook');
    };
    // An empty reply has nothing to deliver (and must not move the last route).
    const skipped =
      reply.trim() === ''
        ? { skipped: 'the reply is empty' }
        : 'skipped' in route
          ? route
          : undefined;
    if (skipped) {
      logger.warn({ actionId: action.id, reason: skipped.skipped }, 'delivery skipped');
      await finishWith(
        'done',
        { state: 'skipped', reason: skipped.skipped, attempts },
        record('skipped', {
          channel: action.channel,
          parts: 0,
          partsSent: 0,
          reason: skipped.skipped,
        }),
        `delivery skipped: ${skipped.skipped}`,
      );
      return;
    }
    if ('skipped' in route) return;
    const target = { channel: route.channel, recipient: route.recipient };
    const progress = (partsSent: number, parts?: number): Outcome => ({
      status: 'delivering',
      reply,
      delivery: {
        state: 'pending',
        ...target,
        partsSent,
        attempts,
        ...(parts !== undefined && { parts }),
      },
    });
    // The reply is kept before anything goes out: a crash from here on redoes only the delivery.
    if (!(await store.saveOutcome(row, progress(previous?.partsSent ?? 0), unsaved))) {
      // The run is no longer this claim's (its lease expired and another instance took it):
      // that instance delivers; sending here too would send the reply twice.
      logger.warn({ actionId: action.id }, 'run taken over elsewhere: its delivery is left to it');
      return;
    }
    unsaved = undefined;
    const attempt = await sendParts(
      route,
      reply,
      previous?.partsSent ?? 0,
      async (sent, recipient) => {
        // A chat the product moved: a resumed delivery sends the rest to the new id.
        target.recipient = recipient;
        await store.saveOutcome(row, progress(sent));
      },
      deps.signal,
    );
    // The product may have moved the chat: what is recorded from here on is the new id.
    target.recipient = attempt.recipient;
    const detail = {
      ...target,
      parts: attempt.parts,
      partsSent: attempt.partsSent,
      ...(attempt.reason !== undefined && { reason: attempt.reason }),
    };
    if (attempt.outcome === 'sent') {
      await moveLastRoute(deps, { source: 'hook', attempted: route, delivered: target });
      await finishWith(
        'done',
        {
          state: 'sent',
          ...target,
          parts: attempt.parts,
          partsSent: attempt.partsSent,
          attempts,
        },
        record('sent', detail),
      );
      return;
    }
    const reason = attempt.reason ?? 'unknown';
    if (attempt.outcome === 'retry' && !deps.stopped() && attempts < settings.retry.maxAttempts) {
      const delay = retryDelayMs(attempts, settings.retry, attempt.retryAfterMs);
      await lastWrite(store.requeue(row, delay, progress(attempt.partsSent, attempt.parts)), ended);
      logger.warn(
        {
          actionId: action.id,
          channel: route.channel,
          attempt: attempts,
          delayMs: Math.round(delay),
          reason,
        },
        'delivery will be retried',
      );
      setTimeout(deps.kick, delay + 5).unref();
      return;
    }
    if (attempt.outcome === 'retry' && deps.stopped()) {
      await lastWrite(
        store.requeue(row, 0, progress(attempt.partsSent, attempt.parts), { refundAttempt: true }),
        ended,
      );
      return;
    }
    const state = attempt.outcome === 'retry' ? 'dead' : 'failed';
    logger.error({ actionId: action.id, channel: route.channel, reason }, 'delivery failed');
    await finishWith(
      state,
      { state, ...target, parts: attempt.parts, partsSent: attempt.partsSent, attempts, reason },
      record(state, detail),
      `delivery ${state === 'dead' ? 'gave up' : 'failed'}: ${reason}`,
    );
  };
}
