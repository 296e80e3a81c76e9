/**
 * The heartbeat: the default agent's turn in the main session, fed with the
 * pending system events (as `System:` lines) and the heartbeat prompt. It
 * runs on the schedule (interval or cron via node-cron, or off) and when
 * asked: at once, or, within the coalescing window of the last one's start,
 * at the window's end; requests that arrive while one runs or waits coalesce
 * into one more run, and a run asked for now that left events pending for
 * want of room is followed by another at once. A reply that is only the ack token is
 * recorded, not delivered. Every event in the prompt is either written by
 * hookgate from its config or wrapped as untrusted content; the history is
 * the heartbeat's own turns. The events shown and the history sent fit
 * runtime.maxPromptBytes: events are weighed before they are read, and those
 * past the budget stay pending for the next heartbeat.
 */
import { errorKind, errorText } from '../observe/error-text.ts';
import cron, { type ScheduledTask } from 'node-cron';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import { type LongTimer, longInterval } from '../long-timer.ts';
import type { Logger } from '../log.ts';
import type { AgentSettings } from './agents.ts';
import { NO_ISOLATION } from './event-isolation.ts';
import { createHeartbeatDelivery } from './heartbeat-delivery.ts';
import { createFollowUp } from './heartbeat-follow-up.ts';
import { heartbeatTurn, type TurnContext, type TurnInput } from './heartbeat-turn.ts';
import type { LastRoutePolicy } from './last-route.ts';
import type { RuntimeStore, TurnOwner } from './runtime-store.ts';
import type { Schedule } from './schedule.ts';

export type HeartbeatSettings = {
  mainKey: string;
  prompt: string;
  ackToken: string;
  /**
   * A heartbeat asked for now within this long of the last one's start waits for the window's
   * end (0: never waits). Each heartbeat is an agent turn: a flood of wakes and hook runs gets
   * a few turns with many events each, not one turn per event.
   */
  coalesceMs: number;
  schedule: Schedule;
  /** Most events one heartbeat includes (the rest go in the heartbeat that follows at once). */
  maxEvents: number;
  /** Most bytes of message and history one heartbeat sends (`runtime.maxPromptBytes`). */
  maxPromptBytes: number;
  /** The delivery retry policy (runtime.retry), as for agent runs. */
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  /** Who may move the last route (the heartbeat keeps it, following a moved chat). */
  lastRoute: LastRoutePolicy;
  /** How long a reply's delivery attempt is its instance's before another may take it over. */
  leaseMs: number;
};

export type Heartbeat = {
  /** Run as soon as possible (coalesced with any run in progress or waiting). */
  requestNow(reason: string): void;
  /**
   * An operator's request (`hookgate heartbeat now`, request `seq`): run as soon as possible,
   * and answer the request once a heartbeat has ended, so that one an instance took and never
   * served (it died first) is asked again (`reason` resumed) where the next leader starts.
   */
  requestFor(seq: number, reason?: string): void;
  start(): void;
  /** Stop scheduling; resolves when a run in progress has ended. */
  stop(): Promise<void>;
  /** Resolves when no heartbeat is running or waiting (for tests and shutdown). */
  idle(): Promise<void>;
  /** The records of the heartbeats this instance runs, once one being opened is open. */
  ownRecords(): Promise<string[]>;
  /**
   * Schedule the replies the store still has to deliver: `always` when the lead is gained; else
   * (after each lead check) only while this instance knows of replies still due.
   */
  sweepDeliveries(always?: boolean): Promise<void>;
};

/** Create the heartbeat of the main session. */
export function createHeartbeat(deps: {
  store: RuntimeStore;
  /** The default agent as the current configuration has it (a reload may change its runner). */
  agent: () => AgentSettings;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  settings: HeartbeatSettings;
  logger: Logger;
  signal: AbortSignal;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
  /** Whether this instance leads (runs heartbeats); always where one process owns the store. */
  leading?: () => boolean;
  /** Hand a request for a heartbeat to the leader (when this instance does not lead). */
  forward?: (reason: string) => void;
}): Heartbeat {
  const { store, settings, logger } = deps;
  let running: Promise<void> | undefined;
  let lastNoRunner = Number.NEGATIVE_INFINITY;
  // A launch is due (next turn, or at the end of the coalescing window); `launched` settles then.
  let waiting = false;
  let launched: Promise<void> = Promise.resolve();
  let launchedNow: () => void = () => undefined;
  let windowTimer: NodeJS.Timeout | undefined;
  let lastStart = Number.NEGATIVE_INFINITY;
  let again = false;
  // A request for a heartbeat now (not the schedule's) that no heartbeat has fully served yet.
  let nowAsked = false;
  let stopped = false;
  let timer: LongTimer | undefined;
  // Operators' requests taken and not yet served by a heartbeat's end. The narrowing of a
  // refused batch (event-isolation.ts) is held in memory too, in the turns' context: a restart,
  // or a new leader, starts it again.
  const operatorRequests: number[] = [];
  const followUp = createFollowUp({ retry: settings.retry, request: (why) => requestNow(why) });
  let task: ScheduledTask | undefined;
  // Open records of this instance's heartbeats: a lead that lapsed and came back (a stall, no
  // other leader meanwhile) recovers a previous leader's, never these (its runner was ended and
  // its answered turn thrown away, its events shown again).
  const own = new Set<string>();
  let opening: Promise<unknown> = Promise.resolve();
  const delivery = createHeartbeatDelivery({
    store,
    adapters: deps.adapters,
    settings,
    logger,
    signal: deps.signal,
    stopped: () => stopped,
    ...(deps.leading && { leading: deps.leading }),
    ...(deps.routeMoved && { routeMoved: deps.routeMoved }),
  });
  const turns: TurnContext = {
    store,
    settings,
    logger,
    signal: deps.signal,
    delivery,
    followUp,
    narrowing: { state: NO_ISOLATION },
    stopped: () => stopped,
    ...(deps.leading && { leading: deps.leading }),
    ...(deps.forward && { forward: deps.forward }),
  };

  /**
   * One heartbeat; true when it was asked for now and events it had no room for are still
   * pending (the event of the wake that asked may be among them).
   */
  async function runOnce(reason: string): Promise<boolean> {
    // Taken before the events are read: a request made after this point sets it again.
    const servesNow = nowAsked;
    nowAsked = false;
    const agent = deps.agent();
    if (!agent.runner) {
      // Said plainly, but once a minute: under load every wake would otherwise write a record.
      const now = Date.now();
      if (now - lastNoRunner < 60_000) return false;
      lastNoRunner = now;
    }
    const started = store.startHeartbeat(reason);
    opening = started.catch(() => undefined);
    const id = await started;
    own.add(id);
    try {
      if (!agent.runner) {
        await noRunner(id, agent.id);
        return false;
      }
      return await turn(id, reason, servesNow, { ...agent, runner: agent.runner });
    } catch (err) {
      // A throw past the turn (a store write that failed): the record ends failed rather than
      // staying running; its events stay pending for the next heartbeat.
      const kind = errorKind(err);
      const error = `hookgate error while running the heartbeat (${kind})`;
      await store.finishHeartbeat(id, { state: 'failed', events: [], error }).catch(() => false);
      throw err;
    } finally {
      own.delete(id);
    }
  }

  /** Heartbeat `id` fails: the default agent has no runner. */
  async function noRunner(id: string, agentId: string): Promise<void> {
    // Counted, not read: a failed heartbeat records only how many events it would have had.
    const events = await store.pendingSizes(settings.mainKey, settings.maxEvents);
    const error = `no runner is configured for agent "${agentId}"`;
    // The operator asked for one and got it, failed: a restart would only fail it again.
    const answers = operatorRequests.splice(0);
    const seqs = events.map((event) => event.seq);
    const failed = { state: 'failed', events: seqs, error, answers } as const;
    if (!(await store.finishHeartbeat(id, failed))) operatorRequests.unshift(...answers);
    logger.warn({ heartbeatId: id, reason: error }, 'heartbeat failed');
  }

  /** Heartbeat `id`'s turn; true when another should follow at once. */
  async function turn(
    id: string,
    reason: string,
    servesNow: boolean,
    agent: TurnInput['agent'],
  ): Promise<boolean> {
    const owner: TurnOwner = { agentId: agent.id, sessionKey: settings.mainKey, kind: 'heartbeat' };
    // This heartbeat is the retry or the narrowing's step that was due.
    const due = followUp.take();
    // The operators' requests it serves, answered with its end; given back if it has none.
    const answers = operatorRequests.splice(0);
    let served = false;
    try {
      const end = await heartbeatTurn(turns, { id, reason, servesNow, agent, owner, due, answers });
      served = end.served;
      return end.more;
    } finally {
      if (!served) operatorRequests.unshift(...answers);
    }
  }

  function launch(reason: string): void {
    waiting = false;
    windowTimer = undefined;
    launchedNow();
    // Shutdown aborts the signal before it stops the heartbeat: no new turn starts then.
    if (stopped || deps.signal.aborted) return;
    // The lead may have moved while this waited for its window: the new leader runs it.
    if (deps.leading && !deps.leading()) {
      if (nowAsked) deps.forward?.(reason);
      nowAsked = false;
      return;
    }
    lastStart = performance.now();
    running = runOnce(reason)
      .catch((err: unknown) => {
        logger.error({ err: errorText(err) }, 'heartbeat crashed');
        return false;
      })
      .then((more) => {
        running = undefined;
        if (stopped || deps.signal.aborted) return;
        // A wake that asked for a heartbeat now, behind a full batch of older events, gets the
        // next one at once rather than at the next scheduled check; requests that came while
        // it ran wait for the window.
        if (again || more) requestNow(more ? 'backlog' : 'coalesced');
        again = false;
      });
  }

  function requestNow(reason: string): void {
    if (stopped) return;
    const scheduled = reason === 'periodic' || reason === 'cron';
    if (deps.leading && !deps.leading()) {
      // The leader runs its own schedule; what happened here (a wake) is handed to it.
      if (!scheduled) deps.forward?.(reason);
      return;
    }
    if (!scheduled) nowAsked = true;
    if (running) {
      again = true;
      return;
    }
    // The schedule's checks and a backlog's next batch never wait for the window.
    const wait =
      scheduled || reason === 'backlog' ? 0 : lastStart + settings.coalesceMs - performance.now();
    if (waiting) {
      // One waiting for the window starts now if this one may not wait.
      if (wait <= 0 && windowTimer) {
        clearTimeout(windowTimer);
        windowTimer = undefined;
        setImmediate(() => launch(reason));
      }
      return;
    }
    waiting = true;
    ({ promise: launched, resolve: launchedNow } = Promise.withResolvers<void>());
    if (wait > 0) {
      // Unref'd: a heartbeat waiting for its window does not keep the process alive.
      windowTimer = setTimeout(() => launch(reason), wait);
      windowTimer.unref();
    } else setImmediate(() => launch(reason));
  }

  return {
    requestNow,
    requestFor(seq, reason = 'requested') {
      operatorRequests.push(seq);
      requestNow(reason);
    },
    start() {
      const schedule = settings.schedule;
      if (schedule.kind === 'interval') {
        // In steps: an interval longer than a Node timer waits (30d) fired every millisecond.
        timer = longInterval(() => requestNow('periodic'), schedule.ms);
      } else if (schedule.kind === 'cron') {
        task = cron.schedule(schedule.expression, () => requestNow('cron'), {
          name: 'hookgate-heartbeat',
        });
      }
    },
    async stop() {
      stopped = true;
      timer?.clear();
      followUp.stop();
      if (task) await task.destroy();
      // A heartbeat waiting for its window does not start now (none starts once shutdown began).
      if (windowTimer) {
        clearTimeout(windowTimer);
        windowTimer = undefined;
        waiting = false;
        launchedNow();
      }
      await running;
      await delivery.stop();
    },
    async idle() {
      while (running || waiting) await (running ?? launched);
    },
    async ownRecords() {
      await opening;
      return [...own, ...delivery.inFlight()];
    },
    sweepDeliveries: (always) => delivery.sweep(always),
  };
}
