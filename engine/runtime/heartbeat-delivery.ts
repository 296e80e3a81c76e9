/**
 * Delivering heartbeat replies: to the main session's last route, once,
 * what did not go out retried by the runtime's retry policy. The delivery
 * lives in the store until it is over (the heartbeat's end records it as due,
 * each attempt is claimed under a lease, its parts kept as they go out), so a
 * restart or a new leader resumes it; only the leading instance sends. Timers
 * start each retry on time; the leader's sweep (after each lead check, while
 * this instance knows of replies still due) catches whatever a timer missed:
 * an attempt that threw, one claimed by an instance that died or lost the lead.
 * The outcome is recorded, the last route moved where the policy lets a
 * heartbeat move it, and a failure noted in the main session (the product's
 * reason wrapped, as everything hookgate did not write).
 */
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import { wrapUntrusted } from '../safety.ts';
import { headUnits } from '../text-cut.ts';
import { attemptDelivery, type DeliveryLedger } from './delivery-attempt.ts';
import { deliveryRecorded, recordDelivery } from './delivery-records.ts';
import { createDueWork } from './due-work.ts';
import type { LastRoutePolicy } from './last-route.ts';
import type {
  DeliveryPartsSent,
  DeliveryRecord,
  HeartbeatDeliveryClaim,
  NewEvent,
  RuntimeStore,
} from './runtime-store.ts';

export type HeartbeatDeliveryDeps = {
  store: RuntimeStore;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  settings: {
    mainKey: string;
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    lastRoute: LastRoutePolicy;
    /** How long an attempt in flight is its instance's: after that another may take it over. */
    leaseMs: number;
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
  /**
   * Schedule every reply the store still has to deliver. Called when the lead is gained (always
   * reads) and after each lead check (reads only while this instance knows of replies still due).
   */
  sweep(always?: boolean): Promise<void>;
  /** Cancel the timers (the replies stay due in the store); resolves when no attempt is running. */
  stop(): Promise<void>;
  /** The replies whose attempt runs here (claimed, or being claimed): a recovery keeps them. */
  inFlight(): string[];
};

/** Create the delivery of heartbeat replies. */
export function createHeartbeatDelivery(deps: HeartbeatDeliveryDeps): HeartbeatDelivery {
  const { store, settings, logger } = deps;
  // Shutdown aborts the signal first, then stops the heartbeat: either means no new attempt.
  const halted = () => deps.stopped() || deps.signal.aborted;
  // Each reply on a timer for its next attempt, found again by the leader's sweeps.
  const work = createDueWork({
    attempt: attemptOnce,
    async pending(limit, after) {
      const page = await store.pendingHeartbeatDeliveries(limit, after);
      // One in flight elsewhere is tried once its lease ran out (the claim refuses it before).
      return page.map(({ id, dueAtMs, claimedAtMs }) => ({
        id,
        atMs:
          claimedAtMs === null ? dueAtMs : Math.max(dueAtMs, claimedAtMs + settings.leaseMs + 1),
      }));
    },
    halted,
    failed: (id, err) =>
      logger.error({ heartbeatId: id, err: (err as Error).message }, 'heartbeat delivery crashed'),
  });

  // Attempts running here, named from before their claim is asked: a lead taken back (a stall,
  // nobody else leading meanwhile) must not free this instance's own claim for its sweep to
  // take over beside the attempt, sending a part twice.
  const running = new Set<string>();

  async function attemptOnce(id: string): Promise<void> {
    running.add(id);
    try {
      await attemptClaimed(id);
    } finally {
      running.delete(id);
    }
  }

  async function attemptClaimed(id: string): Promise<void> {
    // The leader delivers; one that lost the lead leaves the reply due for the next leader.
    if (halted() || (deps.leading && !deps.leading())) return;
    const now = Date.now();
    const claim = await store.claimHeartbeatDelivery(id, now, now - settings.leaseMs);
    // Not due, in flight elsewhere, or over.
    if (!claim) return;
    // How far this attempt got (and where its parts go): a later attempt sends the rest there.
    let progress: DeliveryPartsSent = { partsSent: claim.partsSent };
    // A write refused means another instance took the attempt over: no more parts.
    const lost = new AbortController();
    // One write at a time, in order: a renewal never lands after a later part's progress. Each
    // waits for the one before however it ended: a renewal that failed must not fail the parts'.
    let writes = Promise.resolve();
    const keep = (next: DeliveryPartsSent): Promise<void> => {
      progress = next;
      const write = writes
        .catch(() => undefined)
        .then(async () => {
          if (!(await store.saveHeartbeatDelivery(claim, next))) lost.abort();
        });
      writes = write;
      return write;
    };
    // A part can take longer than the lease (an adapter's timeout): the lease is renewed meanwhile.
    const renewal = setInterval(() => {
      keep(progress).catch(() => undefined);
    }, settings.leaseMs / 3);
    renewal.unref();
    try {
      await send(claim, keep, lost);
    } catch (err) {
      work.mark();
      await handBack(claim, progress.partsSent, (err as Error).message);
      throw err;
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * After an attempt failed inside hookgate: tried again after the base delay, or, its attempts
   * spent, given up with the failure noted. If even that write fails, the claim's lease runs
   * out and a sweep takes it over.
   */
  async function handBack(claim: HeartbeatDeliveryClaim, sent: number, reason: string) {
    try {
      if (claim.attempts < settings.retry.maxAttempts) {
        const atMs = Date.now() + settings.retry.baseDelayMs;
        if (await store.saveHeartbeatDelivery(claim, { partsSent: sent }, { atMs }))
          work.at(claim.id, atMs, true);
        return;
      }
      await end(
        claim,
        {
          ...recordOf(claim),
          channel: 'last',
          state: 'dead',
          parts: 0,
          partsSent: sent,
          error: reason,
        },
        failureNote('last', reason),
      );
    } catch {
      // Left to the lease and the sweep.
    }
  }

  /** What every delivery record of this attempt says. */
  function recordOf(claim: HeartbeatDeliveryClaim) {
    return {
      source: 'heartbeat' as const,
      sourceId: claim.id,
      text: claim.reply,
      attempts: claim.attempts,
    };
  }

  /** The main session's note of a reply that could not be delivered. */
  function failureNote(channel: string, reason: string): NewEvent {
    return {
      sessionKey: settings.mainKey,
      // The reason carries the product's answer: wrapped, as everything not written by hookgate.
      text: `Heartbeat reply could not be delivered to ${channel}:\n${wrapUntrusted(headUnits(reason, 1000), 'Delivery error').text}`,
      source: 'delivery',
      trusted: false,
    };
  }

  /** The attempt, with the heartbeat's delivery row as its ledger. */
  async function send(
    claim: HeartbeatDeliveryClaim,
    keep: (progress: DeliveryPartsSent) => Promise<void>,
    lost: AbortController,
  ) {
    const ledger: DeliveryLedger = {
      async begin({ partsSent, target }) {
        // The claim may have waited for a connection (a flood, a stall) past the lead: its time
        // is the one it was asked at, so a new leader would take it over at once and send too.
        // Kept now (fenced, stamped afresh), then the lead checked with no wait before a part.
        await keep({ partsSent, target });
        if (lost.signal.aborted) return false;
        if (!deps.leading || deps.leading()) return true;
        logger.warn({ heartbeatId: claim.id }, 'heartbeat delivery left to the new leader');
        await store.saveHeartbeatDelivery(
          claim,
          { partsSent, target },
          { atMs: Date.now(), refund: true },
        );
        return false;
      },
      progress: ({ partsSent, target }) => keep({ partsSent, target }),
      lost: () => lost.signal.aborted,
      async retry({ partsSent, target }, delayMs) {
        // Whole milliseconds: the delay has jitter, and PostgreSQL keeps the time as bigint.
        const atMs = Math.ceil(Date.now() + delayMs);
        work.mark();
        if (!(await store.saveHeartbeatDelivery(claim, { partsSent, target }, { atMs })))
          return false;
        work.at(claim.id, atMs, true);
        return true;
      },
      async refund({ partsSent, target }) {
        // Due again at once for the next start, the attempt not counted.
        await store.saveHeartbeatDelivery(
          claim,
          { partsSent, target },
          { atMs: Date.now(), refund: true },
        );
      },
      end: (record) =>
        end(
          claim,
          record,
          record.state === 'failed' || record.state === 'dead'
            ? failureNote(record.channel, record.error ?? 'unknown')
            : undefined,
        ),
    };
    await attemptDelivery(
      deps,
      {
        source: 'heartbeat',
        sourceId: claim.id,
        reply: claim.reply,
        request: { channel: 'last', fallback: false },
        attempts: claim.attempts,
        partsSent: claim.partsSent,
        ...(claim.target && { target: claim.target }),
        signal: AbortSignal.any([deps.signal, lost.signal]),
        halted,
      },
      ledger,
    );
  }

  /** The final record (and a failure's note); taken over elsewhere, what this one did is still on record. */
  async function end(claim: HeartbeatDeliveryClaim, record: DeliveryRecord, note?: NewEvent) {
    if (await store.endHeartbeatDelivery(claim, record, note)) deliveryRecorded(record);
    else {
      logger.warn({ heartbeatId: claim.id }, 'heartbeat delivery taken over: recorded apart');
      await recordDelivery(store, record);
    }
  }

  return {
    deliver(id) {
      work.mark();
      return work.run(id);
    },
    sweep: (always) => work.sweep(always),
    stop: () => work.stop(),
    inFlight: () => [...running],
  };
}
