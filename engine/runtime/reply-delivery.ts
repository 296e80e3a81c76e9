/**
 * Delivering an agent run's reply, as a step of the worker: the run's row is
 * the delivery's ledger (the reply and its progress in the run's outcome, a
 * retry as the run's requeue, the final record with the run's end and
 * summary); the attempt itself is the one every reply goes through.
 */
import type { RecipientAllowed } from '../delivery/deliver.ts';
import type { AgentAction } from '../../schemas/action.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import { attemptDelivery, type DeliveryLedger, type SentParts } from './delivery-attempt.ts';
import { deliveryRecorded, recordDelivery } from './delivery-records.ts';
import type { Heartbeat } from './heartbeat.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { summaryText } from './replies.ts';
import type {
  DeliveryProgress,
  DeliveryRecord,
  Outcome,
  RunRow,
  RunTurns,
  RuntimeStore,
} from './runtime-store.ts';

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
    recipientAllowed?: RecipientAllowed;
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
  const { store, heartbeat, logger, settings } = deps;
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
    const attempts = (previous?.attempts ?? 0) + 1;
    // The turns until the first saved progress has written them.
    let unsaved = turns;
    // `counted`: a send that shutdown interrupted gives its attempt back (the next one has its
    // number), as the action's own attempts and a heartbeat's delivery do.
    const progress = (sent: SentParts, counted = true): Outcome => ({
      status: 'delivering',
      reply,
      delivery: {
        state: 'pending',
        ...sent.target,
        partsSent: sent.partsSent,
        attempts: counted ? attempts : attempts - 1,
        ...(sent.parts !== undefined && { parts: sent.parts }),
      },
    });
    // The run's state is its row: progress in its outcome, a retry as its requeue, the end with
    // its summary (and the turns, if no progress wrote them).
    const ledger: DeliveryLedger = {
      async begin(sent) {
        // The reply is kept before anything goes out: a crash from here on redoes only the delivery.
        if (await store.saveOutcome(row, progress(sent), unsaved)) {
          unsaved = undefined;
          return true;
        }
        // Taken over by another instance (its lease expired): that one delivers; sending here
        // too would send the reply twice.
        logger.warn(
          { actionId: action.id },
          'run taken over elsewhere: its delivery is left to it',
        );
        return false;
      },
      async progress(sent) {
        await store.saveOutcome(row, progress(sent));
      },
      async retry(sent, delayMs) {
        if (!(await lastWrite(store.requeue(row, delayMs, progress(sent)), ended))) return false;
        setTimeout(deps.kick, delayMs + 5).unref();
        return true;
      },
      async refund(sent) {
        await lastWrite(
          store.requeue(row, 0, progress(sent, false), { refundAttempt: true }),
          ended,
        );
      },
      async end(recorded) {
        const state =
          recorded.state === 'failed' || recorded.state === 'dead' ? recorded.state : 'done';
        const finished = await lastWrite(
          store.finish(
            row,
            state,
            { status: 'ok', reply, delivery: progressOf(recorded) },
            summaryEvent(settings.mainKey, action, 'ok', reply, noteOf(recorded)),
            unsaved,
            recorded,
          ),
          ended,
        );
        // Taken over elsewhere (its lease expired): what this instance did is still on record.
        if (finished) deliveryRecorded(recorded);
        else await recordDelivery(store, recorded);
        if (action.wakeMode === 'now') heartbeat.requestNow('hook');
      },
    };
    const target =
      previous?.channel !== undefined && previous.recipient !== undefined
        ? { channel: previous.channel, recipient: previous.recipient }
        : undefined;
    await attemptDelivery(
      deps,
      {
        source: 'hook',
        sourceId: action.id,
        reply,
        request: {
          channel: action.channel,
          ...(action.to !== undefined && { to: action.to }),
          fallback: action.mappingId !== undefined,
        },
        attempts,
        partsSent: previous?.partsSent ?? 0,
        ...(target && { target }),
        signal: deps.signal,
        halted: deps.stopped,
      },
      ledger,
    );
  };
}

/** A finished delivery as the run's outcome keeps it. */
function progressOf(recorded: DeliveryRecord): DeliveryProgress {
  const { state, attempts } = recorded;
  if (state === 'skipped') return { state, reason: recorded.error ?? '', attempts };
  return {
    state,
    channel: recorded.channel,
    ...(recorded.recipient !== undefined && { recipient: recorded.recipient }),
    parts: recorded.parts,
    partsSent: recorded.partsSent,
    attempts,
    ...(state !== 'sent' && recorded.error !== undefined && { reason: recorded.error }),
  };
}

/** What the run's summary adds about a delivery that did not go out. */
function noteOf(recorded: DeliveryRecord): string | undefined {
  const reason = recorded.error ?? 'unknown';
  if (recorded.state === 'skipped') return `delivery skipped: ${reason}`;
  if (recorded.state === 'dead') return `delivery gave up: ${reason}`;
  if (recorded.state === 'failed') return `delivery failed: ${reason}`;
  return undefined;
}
