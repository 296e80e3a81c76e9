/**
 * One attempt at delivering a reply, an agent run's or a heartbeat's alike:
 * the route (the rest of a reply goes where its first parts went), the parts
 * sent from where the last attempt stopped, the last route moved after a
 * success, and what comes next decided by one retry policy: sent, tried
 * again later, handed back at shutdown, or over (failed, or dead once its
 * attempts are spent). Where a delivery's state lives between attempts (the
 * run's row, the heartbeat's delivery row) is its ledger's business.
 */
import type { RecipientAllowed } from '../delivery/deliver.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import {
  type Attempt,
  type DeliveryRequest,
  type Route,
  resolveRoute,
  sendParts,
} from '../delivery/deliver.ts';
import type { Logger } from '../log.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { retryDelayMs } from './replies.ts';
import { moveLastRoute } from './route-moves.ts';
import type { DeliveryRecord, RuntimeStore } from './runtime-store.ts';

/** Where a reply's parts go. */
export type DeliveryTarget = { channel: string; recipient: string };

/** How far a delivery got: the parts sent, where they went, and (once known) how many in all. */
export type SentParts = { partsSent: number; target: DeliveryTarget; parts?: number };

/**
 * Keeps a delivery's state between attempts (a run's row, a heartbeat's delivery row). `begin`
 * and `retry` answer false once the delivery is no longer this attempt's (another instance took
 * it over); the other writes are fenced by the ledger itself.
 */
export type DeliveryLedger = {
  /** Before the first part goes out: false stops the attempt before it sends anything. */
  begin?(sent: SentParts): Promise<boolean>;
  /** After each part that went out (a chat the product moved is the new target). */
  progress(sent: SentParts): Promise<void>;
  /** Asked once the parts stop: true when the delivery was taken over meanwhile (nothing more is written). */
  lost?(): boolean;
  /** Not all parts went out: store the next attempt as due in `delayMs` and see that it starts then. */
  retry(sent: SentParts, delayMs: number): Promise<boolean>;
  /** Interrupted by shutdown: due again at once, this attempt not counted. */
  refund(sent: SentParts): Promise<void>;
  /**
   * Over: sent, skipped (with the reason in `error`), failed or dead (the reason in `error`).
   * The record is all a ledger needs to write the end (a run derives its outcome and note from it).
   */
  end(record: DeliveryRecord): Promise<void>;
};

/** What an attempt needs from the runtime. */
export type DeliveryAttemptDeps = {
  store: Pick<RuntimeStore, 'lastRoute' | 'setRoute'>;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  logger: Logger;
  settings: {
    mainKey: string;
    retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
    lastRoute: LastRoutePolicy;
    /** hooks.allowedRecipients, where set (a request's `to` with `last` is only known here). */
    recipientAllowed?: RecipientAllowed;
  };
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
};

/** One reply's delivery as this attempt finds it. */
export type DeliveryJob = {
  /** Whose reply: the last-route policy and the record tell them apart. */
  source: 'hook' | 'heartbeat';
  /** The run's or the heartbeat's id. */
  sourceId: string;
  reply: string;
  /** Where the reply asks to go. */
  request: DeliveryRequest;
  /** This attempt's number (1 for the first). */
  attempts: number;
  /** Parts an earlier attempt sent, and where they went. */
  partsSent: number;
  target?: DeliveryTarget;
  /** Ends the sending (shutdown, or the delivery taken over). */
  signal: AbortSignal;
  /** True once the runtime is stopping: a delivery cut short is handed back, not retried. */
  halted: () => boolean;
};

/** Make one attempt at `job`'s delivery, its state kept by `ledger`. */
export async function attemptDelivery(
  deps: DeliveryAttemptDeps,
  job: DeliveryJob,
  ledger: DeliveryLedger,
): Promise<void> {
  const log = logLines(deps.logger, job);
  const route = await routeOf(deps, job);
  // An empty reply has nothing to deliver (and must not move the last route).
  const skipped =
    job.reply.trim() === '' ? 'the reply is empty' : 'skipped' in route ? route.skipped : undefined;
  if (skipped !== undefined) {
    log.warn({ reason: skipped }, 'skipped');
    // The recipient the reply asked for, where it named one: what a refused `to` was.
    const to = job.request.to;
    const nothing = {
      channel: job.request.channel,
      ...(to !== undefined && { recipient: to }),
      parts: 0,
      partsSent: 0,
    };
    await ledger.end(recordOf(job, 'skipped', nothing, skipped));
    return;
  }
  // Only narrows the type: a route that was skipped ended above.
  if ('skipped' in route) return;
  const target: DeliveryTarget = { channel: route.channel, recipient: route.recipient };
  if (ledger.begin && !(await ledger.begin({ partsSent: job.partsSent, target }))) return;
  const sent = await sendParts(
    route,
    job.reply,
    job.partsSent,
    (partsSent, recipient) => {
      // A chat the product moved: what is kept from here on (and resumed to) is the new id.
      target.recipient = recipient;
      return ledger.progress({ partsSent, target: { ...target } });
    },
    job.signal,
  );
  target.recipient = sent.recipient;
  if (ledger.lost?.()) {
    log.warn({}, 'taken over: no more parts sent');
    return;
  }
  await next(deps, job, ledger, { route, target, sent });
}

/** After the parts stopped: sent, retried, handed back at shutdown, failed or given up. */
async function next(
  deps: DeliveryAttemptDeps,
  job: DeliveryJob,
  ledger: DeliveryLedger,
  { route, target, sent }: { route: Route; target: DeliveryTarget; sent: Attempt },
): Promise<void> {
  const log = logLines(deps.logger, job);
  const { retry } = deps.settings;
  const detail = { ...target, parts: sent.parts, partsSent: sent.partsSent };
  if (sent.outcome === 'sent') {
    await moveLastRoute(deps, { source: job.source, attempted: route, delivered: target });
    await ledger.end(recordOf(job, 'sent', detail, sent.reason));
    return;
  }
  const reason = sent.reason ?? 'unknown';
  const reached: SentParts = {
    partsSent: sent.partsSent,
    target: { ...target },
    parts: sent.parts,
  };
  if (sent.outcome === 'retry' && job.halted()) {
    await ledger.refund(reached);
    return;
  }
  if (sent.outcome === 'retry' && job.attempts < retry.maxAttempts) {
    const delayMs = retryDelayMs(job.attempts, retry, sent.retryAfterMs);
    if (!(await ledger.retry(reached, delayMs)))
      log.warn({}, 'taken over: its retry is left to the instance that has it');
    else {
      const at = { channel: route.channel, attempt: job.attempts, reason };
      log.warn({ ...at, delayMs: Math.round(delayMs) }, 'will be retried');
    }
    return;
  }
  // Named as the record and the run's summary name it: out of retries it gave up (dead).
  const state = sent.outcome === 'retry' ? 'dead' : 'failed';
  log.error(
    { channel: route.channel, reason, attempts: job.attempts },
    state === 'dead' ? 'gave up' : 'failed',
  );
  await ledger.end(recordOf(job, state, detail, reason));
}

/** Where the reply goes: the rest of a reply where its first parts went, else where it asks. */
async function routeOf(deps: DeliveryAttemptDeps, job: DeliveryJob) {
  const resumed = job.partsSent > 0 ? job.target : undefined;
  return resolveRoute(
    resumed ? { channel: resumed.channel, to: resumed.recipient, fallback: false } : job.request,
    await deps.store.lastRoute(deps.settings.mainKey),
    deps.adapters,
    // The rest of a reply goes where its first parts went: checked then (or the product moved it).
    resumed ? undefined : deps.settings.recipientAllowed,
  );
}

/** The delivery's record once it is over. */
function recordOf(
  job: DeliveryJob,
  state: DeliveryRecord['state'],
  where: { channel: string; recipient?: string; parts: number; partsSent: number },
  reason?: string,
): DeliveryRecord {
  return {
    source: job.source === 'hook' ? 'agent' : 'heartbeat',
    sourceId: job.sourceId,
    channel: where.channel,
    ...(where.recipient !== undefined && { recipient: where.recipient }),
    text: job.reply,
    state,
    attempts: job.attempts,
    parts: where.parts,
    partsSent: where.partsSent,
    ...(reason !== undefined && { error: reason }),
  };
}

/** The attempt's log lines, named and keyed by whose reply it is. */
function logLines(logger: Logger, job: DeliveryJob) {
  const ids = job.source === 'hook' ? { actionId: job.sourceId } : { heartbeatId: job.sourceId };
  const what = job.source === 'hook' ? 'delivery' : 'heartbeat delivery';
  return {
    warn: (fields: Record<string, unknown>, msg: string) =>
      logger.warn({ ...ids, ...fields }, `${what} ${msg}`),
    error: (fields: Record<string, unknown>, msg: string) =>
      logger.error({ ...ids, ...fields }, `${what} ${msg}`),
  };
}
