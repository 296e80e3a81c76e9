/**
 * One run, as the worker's step: a wake appends its event; an agent action
 * runs one turn through its agent's runner (with that agent's history in
 * the session), then ends with its summary in the main session, or hands
 * its reply to delivery, or (a turn that did not happen) goes back to the
 * queue by the retry policy. A row that holds no action a run can take ends
 * dead. Every write is fenced by the run's claim. The message and history a
 * turn sends, and the turns it keeps, fit runtime.maxPromptBytes.
 */
import { errorKind } from '../observe/error-text.ts';
import type { RecipientAllowed } from '../delivery/deliver.ts';
import type { AgentAction, WakeAction } from '../../schemas/action.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import { type RunOutcome, runFinished } from '../observe/events.ts';
import type { AgentSettings } from './agents.ts';
import type { Heartbeat } from './heartbeat.ts';
import { createDeliveryStep, lastWrite, summaryEvent } from './reply-delivery.ts';
import { isAckOnly, retryDelayMs } from './replies.ts';
import type { RunResult } from './runners/runner.ts';
import type { RunRow, RuntimeStore, TurnOwner } from './runtime-store.ts';
import { isRunnableAction, UNREADABLE_OUTCOME, wakeEvent } from './stored-runs.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { byteLength } from '../utf8.ts';
import { messageBudget } from './prompt-budget.ts';
import { cutPlain, cutPrompt } from './prompt-cut.ts';
import { historyWithin } from './run-history.ts';
import { linkedAbort } from '../linked-abort.ts';

// A turn not started (back to the queue) or stopped (a failed attempt) because the run's lease
// may have lapsed.
const LEASE_LAPSED = Symbol('lease lapsed');
const LEASE_LOST = Symbol('lease lost during the turn');
const LEASE_LAPSED_REASON = 'its lease may have lapsed before the turn';
const LEASE_LOST_REASON = 'its lease may have lapsed during the turn';
// A turn in progress is stopped with a quarter of its lease left by this process's clock: room
// for the runner to stop (a request aborted, a process group ended) before another instance
// can take the run over. A turn starts only with more than that left, so that it is not
// stopped as soon as it has started.
const RUNNING_LEASE_RESERVE = 0.25;
const START_LEASE_RESERVE = 0.35;
// Starts given up in a row with the attempt given back: a stall now and then is not the run's
// fault, but a database too slow for the lease at every start would requeue it forever.
const MAX_REFUNDED_LAPSES = 3;

/** What a run needs of the runtime's settings. */
export type RunSettings = {
  mainKey: string;
  ackToken: string;
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  defaultAgentId: string;
  historyTurns: number;
  /** Most bytes of message and history one turn sends (`runtime.maxPromptBytes`). */
  maxPromptBytes: number;
  /** Who may move the main session's last route (a hook's delivery never does). */
  lastRoute: LastRoutePolicy;
  /** hooks.allowedRecipients, where set: a reply's own `to` on the channel it goes to. */
  recipientAllowed?: RecipientAllowed;
};

export type RunStepDeps = {
  store: RuntimeStore;
  agents: ReadonlyMap<string, AgentSettings>;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  heartbeat: Heartbeat;
  settings: RunSettings;
  logger: Logger;
  controller: AbortController;
  /** The current default agent, when a reload may change it (else settings.defaultAgentId). */
  defaultAgentId?: () => string;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
  /** True once the worker is stopping (an interrupted run goes back to the queue, not counted). */
  stopped: () => boolean;
  /** Look for work again (after a retry delay). */
  kick: () => void;
};

/** Create the step; it runs a claimed row and calls `ended` once the run's last write is asked. */
export function createRunStep(deps: RunStepDeps) {
  const { store, agents, adapters, heartbeat, settings, logger } = deps;
  const deliverReply = createDeliveryStep({
    store,
    adapters,
    heartbeat,
    logger,
    settings,
    signal: deps.controller.signal,
    stopped: deps.stopped,
    kick: deps.kick,
    ...(deps.routeMoved && { routeMoved: deps.routeMoved }),
  });

  /**
   * Run an action; `ended` is called once its last write (end or requeue) is asked. A run that
   * throws before asking for it (a store write that failed, a defect) is a failed attempt:
   * left running, it would hold its session's later runs back until a restart.
   */
  async function execute(row: RunRow, ended: () => void): Promise<void> {
    let asked = false;
    const end = () => {
      asked = true;
      ended();
    };
    try {
      await runRow(row, end);
    } catch (err) {
      if (asked || deps.stopped()) throw err;
      // A store that fails here too leaves the run running: resumed after a restart or its lease.
      await endCrashed(row, err, end).catch(() => undefined);
      throw err;
    }
  }

  /**
   * A counted attempt, tried again with the usual backoff and ended dead once the attempts are
   * spent. The progress the run saved (a reply being delivered, the parts already sent) is what
   * it keeps: the next attempt redoes only the delivery, from where it stopped.
   */
  async function endCrashed(row: RunRow, err: unknown, ended: () => void): Promise<void> {
    const kind = errorKind(err);
    const reason = `hookgate error while running it (${kind})`;
    // What the run saved must be known before anything is written over it: asked a few times
    // (a busy store passes), and a store that still cannot say leaves the run as it is
    // (resumed after a restart or its lease).
    const current = await readAgain(() => store.run(row.id));
    const saved = current ? current.outcome : row.outcome;
    const progress = saved?.status === 'delivering' ? saved : undefined;
    if (row.attempts < settings.retry.maxAttempts) {
      const delay = retryDelayMs(row.attempts, settings.retry, undefined);
      const outcome = progress ?? { status: 'retrying' as const, reason };
      if (await lastWrite(store.requeue(row, delay, outcome), ended))
        setTimeout(deps.kick, delay + 5).unref();
      return;
    }
    const action: unknown = row.action;
    const final = `gave up after ${row.attempts} attempts: ${reason}`;
    const kept = progress && { reply: progress.reply, delivery: progress.delivery };
    await lastWrite(
      store.finish(
        row,
        'dead',
        { status: 'error', reason: final, ...kept },
        isRunnableAction(action) && action.kind === 'agent'
          ? summaryEvent(settings.mainKey, action, 'error', final)
          : undefined,
      ),
      ended,
    );
  }

  async function runRow(row: RunRow, ended: () => void): Promise<void> {
    const action: unknown = row.action;
    if (!isRunnableAction(action)) {
      // Parseable, but not what any hook writes (another writer, damage): it ends, alone.
      logger.warn({ actionId: row.id }, 'stored action cannot be run: ended dead');
      await lastWrite(store.finish(row, 'dead', UNREADABLE_OUTCOME), ended);
      return;
    }
    if (action.kind === 'wake') return executeWake(row, action, ended);
    return executeAgent(row, action, ended);
  }

  async function executeWake(row: RunRow, action: WakeAction, ended: () => void): Promise<void> {
    await lastWrite(
      store.finish(row, 'done', { status: 'ok' }, wakeEvent(action, settings.mainKey)),
      ended,
    );
    if (action.mode === 'now') heartbeat.requestNow('wake');
  }

  async function executeAgent(row: RunRow, action: AgentAction, ended: () => void): Promise<void> {
    // A turn that already ran and was waiting for its delivery: redo only the delivery.
    if (row.outcome?.status === 'delivering' && row.outcome.reply !== undefined) {
      return deliverReply(row, action, row.outcome.reply, undefined, ended);
    }
    const started = performance.now();
    const message = turnMessage(action);
    const result = await runTurn(row, action, message);
    if (result === LEASE_LOST) {
      logger.warn({ actionId: action.id }, 'agent run stopped: its lease may have lapsed');
      // A turn that ran counts as an attempt, retried after the usual backoff (so a database
      // that answers too slowly for the lease never makes it loop); the claim's fence refuses
      // the write if another instance has taken the run over.
      return retryOrGiveUp(
        row,
        action,
        { status: 'retry', reason: LEASE_LOST_REASON },
        started,
        ended,
      );
    }
    if (result === LEASE_LAPSED) {
      const lapses = lapsesInARow(row) + 1;
      logger.warn(
        { actionId: action.id, lapses },
        'agent run not started: its lease may have lapsed',
      );
      if (lapses > MAX_REFUNDED_LAPSES) {
        // Counted from now on, with the usual backoff, until a turn starts or the attempts end.
        return retryOrGiveUp(
          row,
          action,
          { status: 'retry', reason: LEASE_LAPSED_REASON },
          started,
          ended,
        );
      }
      // Back to the queue at once with its attempt given back while it is still this instance's;
      // the claim's fence refuses the write if another instance has taken the run over.
      await lastWrite(
        store.requeue(
          row,
          0,
          { status: 'retrying', reason: LEASE_LAPSED_REASON, lapses },
          { refundAttempt: true },
        ),
        ended,
      );
      return;
    }
    if (result.status === 'retry') return retryOrGiveUp(row, action, result, started, ended);
    if (result.status !== 'ok') {
      ran(action, result.status === 'timeout' ? 'timeout' : 'failed', started);
      await lastWrite(
        store.finish(
          row,
          'failed',
          { status: result.status, reason: result.reason },
          summaryEvent(settings.mainKey, action, result.status, result.reason),
        ),
        ended,
      );
      logger.warn(
        { actionId: action.id, status: result.status, reason: result.reason },
        'agent run failed',
      );
      if (action.wakeMode === 'now') heartbeat.requestNow('hook');
      return;
    }
    // The turn's outcome; what becomes of its delivery is published on its own.
    ran(action, 'done', started);
    const ack = isAckOnly(result.reply, settings.ackToken);
    // What history keeps: the message as sent, the reply no larger than a message may be.
    const turns = {
      owner: turnOwner(action),
      prompt: message,
      reply: cutPlain(result.reply, messageBudget(settings.maxPromptBytes)),
    };
    // Ack-only replies are never delivered.
    if (!action.deliver || ack) {
      await lastWrite(
        store.finish(
          row,
          'done',
          { status: 'ok', reply: result.reply, ack },
          summaryEvent(settings.mainKey, action, 'ok', result.reply),
          turns,
        ),
        ended,
      );
      if (action.wakeMode === 'now') heartbeat.requestNow('hook');
      return;
    }
    return deliverReply(row, action, result.reply, turns, ended);
  }

  // The default agent as the current configuration has it (a reload may change it).
  const agentFor = (action: AgentAction) =>
    agents.get(action.agentId) ?? agents.get(deps.defaultAgentId?.() ?? settings.defaultAgentId);

  function ran(action: AgentAction, outcome: RunOutcome, started: number): void {
    if (!runFinished.hasSubscribers) return;
    const agentId = agentFor(action)?.id ?? action.agentId;
    runFinished.publish({ agentId, outcome, durationMs: performance.now() - started });
  }

  /**
   * The message a turn sends: the request's text (wrapped when untrusted), cut inside its wrapper
   * to the message's share of the budget.
   */
  const turnMessage = (action: AgentAction): string =>
    cutPrompt(
      action.prompt ?? action.message,
      action.prompt === undefined,
      messageBudget(settings.maxPromptBytes),
    );

  /** History belongs to the agent that runs the turn and the session key, never the key alone. */
  const turnOwner = (action: AgentAction): TurnOwner => ({
    agentId: agentFor(action)?.id ?? action.agentId,
    sessionKey: action.sessionKey,
    kind: 'agent',
  });

  async function runTurn(
    row: RunRow,
    action: AgentAction,
    message: string,
  ): Promise<RunResult | typeof LEASE_LAPSED | typeof LEASE_LOST> {
    const agent = agentFor(action);
    if (!agent?.runner) {
      return {
        status: 'error',
        reason: `no runner is configured for agent "${action.agentId}" (agents.defaults.runner)`,
      };
    }
    const history = await historyWithin(
      store,
      turnOwner(action),
      settings.historyTurns,
      settings.maxPromptBytes - byteLength(message),
    );
    // Another instance may have taken the run over while this one waited (a stalled process, a
    // store down for longer than the lease): its turn must not start beside theirs.
    if (store.holdsLease && !store.holdsLease(row, START_LEASE_RESERVE)) return LEASE_LAPSED;
    const watch = watchLease(row);
    let result: RunResult;
    try {
      result = await agent.runner.run(
        {
          kind: 'agent',
          runId: action.id,
          agentId: action.agentId,
          sessionKey: action.sessionKey,
          message,
          model: action.model ?? agent.model ?? null,
          thinking: action.thinking ?? null,
          timeoutSeconds: action.timeoutSeconds ?? agent.timeoutSeconds,
          history,
          origin: {
            hook: action.hook,
            ...(action.mappingId !== undefined && { mappingId: action.mappingId }),
            untrusted: action.untrusted,
            ...(action.verification && { verification: action.verification }),
          },
        },
        {
          signal: watch.signal,
          onSpawn: (pgid) => {
            store
              .setRunnerGroup(row, pgid)
              .catch((err: unknown) =>
                logger.error(
                  { actionId: action.id, err: (err as Error).message },
                  'runner not recorded',
                ),
              );
          },
        },
      );
    } finally {
      watch.stop();
    }
    // A reply that came anyway is kept (the end's write is fenced: refused if the run was taken
    // over); anything else a stopped runner answers is the stop, and the run goes back.
    return watch.lost() && result.status !== 'ok' ? LEASE_LOST : result;
  }

  /**
   * Where instances share the store, a turn in progress is stopped (its runner's signal) once
   * this instance's lease on the run may lapse before the runner could stop: another instance
   * may take the run over then, and its turn must not run beside this one. Elsewhere the
   * signal is the worker's own (shutdown).
   */
  function watchLease(row: RunRow): { signal: AbortSignal; lost: () => boolean; stop: () => void } {
    if (!store.holdsLease || store.leaseWatchMs === undefined) {
      return { signal: deps.controller.signal, lost: () => false, stop: () => {} };
    }
    // The run's own signal, also aborted by the worker's (shutdown).
    const link = linkedAbort(deps.controller.signal);
    let lost = false;
    const timer = setInterval(() => {
      if (store.holdsLease?.(row, RUNNING_LEASE_RESERVE) !== false) return;
      lost = true;
      clearInterval(timer);
      link.abort(new Error(LEASE_LOST_REASON));
    }, store.leaseWatchMs);
    // Nothing to keep the process alive for: the turn's own I/O does that.
    timer.unref();
    return {
      signal: link.signal,
      lost: () => lost,
      stop: () => {
        clearInterval(timer);
        link.release();
      },
    };
  }

  async function retryOrGiveUp(
    row: RunRow,
    action: AgentAction,
    result: Extract<RunResult, { status: 'retry' }>,
    started: number,
    ended: () => void,
  ): Promise<void> {
    // Interrupted by our own shutdown: back to the queue, not counted against the attempts.
    if (deps.stopped()) {
      ran(action, 'interrupted', started);
      await lastWrite(
        store.requeue(
          row,
          0,
          { status: 'retrying', reason: result.reason },
          { refundAttempt: true },
        ),
        ended,
      );
      return;
    }
    if (row.attempts < settings.retry.maxAttempts) {
      ran(action, 'retry', started);
      const delay = retryDelayMs(row.attempts, settings.retry, result.retryAfterMs);
      await lastWrite(
        store.requeue(row, delay, { status: 'retrying', reason: result.reason }),
        ended,
      );
      logger.warn(
        {
          actionId: action.id,
          attempt: row.attempts,
          delayMs: Math.round(delay),
          reason: result.reason,
        },
        'agent run will be retried',
      );
      setTimeout(deps.kick, delay + 5).unref();
      return;
    }
    ran(action, 'dead', started);
    const reason = `gave up after ${row.attempts} attempts: ${result.reason}`;
    await lastWrite(
      store.finish(
        row,
        'dead',
        { status: 'error', reason },
        summaryEvent(settings.mainKey, action, 'error', reason),
      ),
      ended,
    );
    logger.error({ actionId: action.id, reason }, 'agent run is dead');
    if (action.wakeMode === 'now') heartbeat.requestNow('hook');
  }

  return execute;
}

// Pauses before the tries of a read after a step threw (the store may have been busy).
const READ_AGAIN_MS = [0, 100, 500];

async function readAgain<T>(read: () => Promise<T>): Promise<T> {
  let failure: unknown;
  for (const pause of READ_AGAIN_MS) {
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    try {
      return await read();
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/**
 * How many starts in a row this run gave up because its lease may have lapsed: the count its
 * last requeue kept, and past the refunded ones (a retry's outcome keeps none) more than those.
 */
function lapsesInARow(row: RunRow): number {
  const last = row.outcome;
  if (last?.status !== 'retrying' || last.reason !== LEASE_LAPSED_REASON) return 0;
  // Anything but a count this code wrote (another writer, damage) gives no more back.
  const lapses = last.lapses;
  return Number.isSafeInteger(lapses) && (lapses as number) >= 0
    ? (lapses as number)
    : MAX_REFUNDED_LAPSES;
}
