/**
 * One heartbeat's turn, once its record is open: the events its plan takes
 * (event-isolation.ts), the history that fits, the runner's turn, and the
 * record's end, which consumes the events (or sets a refused one aside),
 * keeps the turns, queues the reply and answers the operators' requests it
 * served, in one write. The heartbeat (heartbeat.ts) decides when turns run.
 */
import { errorKind, errorText } from '../observe/error-text.ts';
import type { AgentSettings } from './agents.ts';
import {
  afterHeartbeat,
  type Isolation,
  type IsolationStep,
  planNext,
  type TurnOutcome,
} from './event-isolation.ts';
import { nextBatch } from './heartbeat-batch.ts';
import type { HeartbeatDelivery } from './heartbeat-delivery.ts';
import type { FollowUp, FollowUpReason } from './heartbeat-follow-up.ts';
import { heartbeatMessage } from './heartbeat-prompt.ts';
import type { Logger } from '../log.ts';
import { byteLength } from '../utf8.ts';
import { HEARTBEAT_HISTORY_TURNS, messageBudget } from './prompt-budget.ts';
import { cutPlain } from './prompt-cut.ts';
import { isAckOnly } from './replies.ts';
import { historyWithin } from './run-history.ts';
import type { RuntimeStore, TurnOwner } from './runtime-store.ts';
import type { Runner, RunRequest, RunResult } from './runners/runner.ts';

/** What a turn needs from the heartbeat that runs it. */
export type TurnContext = {
  store: RuntimeStore;
  settings: {
    mainKey: string;
    prompt: string;
    ackToken: string;
    maxEvents: number;
    maxPromptBytes: number;
  };
  logger: Logger;
  signal: AbortSignal;
  delivery: HeartbeatDelivery;
  followUp: FollowUp;
  /** The narrowing's state, kept by the heartbeat between turns. */
  narrowing: { state: Isolation };
  stopped: () => boolean;
  leading?: () => boolean;
  forward?: (reason: string) => void;
};

/** One turn to run. */
export type TurnInput = {
  /** The heartbeat's open record. */
  id: string;
  reason: string;
  /** It serves a request for a heartbeat now. */
  servesNow: boolean;
  agent: AgentSettings & { runner: Runner };
  owner: TurnOwner;
  /** The follow-up that was due when it began (a retry, a narrowing step). */
  due: FollowUpReason | undefined;
  /** Operators' requests it serves, answered with its end. */
  answers: number[];
};

/** `served`: the record ended by this turn (the operators' requests answered); `more`: run another at once. */
export type TurnEnd = { served: boolean; more: boolean };

/** Run heartbeat `input.id`'s turn to the end of its record. */
export async function heartbeatTurn(ctx: TurnContext, input: TurnInput): Promise<TurnEnd> {
  const { store, settings } = ctx;
  const { id, owner } = input;
  // The oldest pending events that fit the message's share: a backlog of large events was
  // read 100 at a time and sent whole, 25 MB and more per turn.
  const plan = planNext(ctx.narrowing.state);
  const { events, seqs, more } = await nextBatch(store, settings, plan);
  const message = heartbeatMessage(events, settings.prompt);
  const history = await historyWithin(
    store,
    owner,
    HEARTBEAT_HISTORY_TURNS,
    settings.maxPromptBytes - byteLength(message),
  );
  // The lead may have lapsed while this heartbeat waited for its record and reads (a pool
  // held by a flood, a stall): the new leader runs these events, and a turn here would show
  // them to the agent a second time. Checked with no wait before the turn starts.
  if (ctx.leading && !ctx.leading()) return leadLost(ctx, input);
  const result = await askGuarded(ctx, input, message, history);
  let outcome: TurnOutcome =
    result.status === 'ok' ? 'answered' : result.status === 'retry' ? 'not-run' : 'refused';
  // A turn that did not happen in all the retry policy's attempts is taken as refused: a
  // runner that answers 5xx or breaks off on one event's text would also hold the session.
  if (outcome === 'not-run' && !ctx.stopped() && !ctx.signal.aborted) {
    const retryAfterMs = result.status === 'retry' ? result.retryAfterMs : undefined;
    if (ctx.followUp.notRun(input.due, input.servesNow, retryAfterMs)) outcome = 'refused';
  }
  const step = afterHeartbeat(ctx.narrowing.state, plan, seqs, outcome);
  ctx.narrowing.state = step.state;
  if (result.status !== 'ok') {
    const { status, reason } = result;
    return endFailed(ctx, input, { seqs, more, step, outcome, status, reason });
  }
  ctx.followUp.answered();
  const ack = isAckOnly(result.reply, settings.ackToken);
  // An ack-only exchange says nothing needed attention: it stays in the heartbeat's record but
  // not in its history, which would otherwise send its (consumed) events with every later
  // heartbeat; under a flood of wakes that made up most of the CPU per wake.
  const finished = await store.finishHeartbeat(id, {
    state: 'done',
    events: seqs,
    reply: result.reply,
    ack,
    // The reply is kept for history no larger than a message may be (it is delivered whole).
    ...(!ack && {
      turns: {
        owner,
        prompt: message,
        reply: cutPlain(result.reply, messageBudget(settings.maxPromptBytes)),
      },
      deliver: true,
    }),
    answers: input.answers,
  });
  // Failed meanwhile by the instance that took the lead: it runs the events again and
  // delivers its own reply; delivering this one too would send the agent's answer twice, and
  // keeping its turns would tell the next heartbeat that it was answered.
  if (!finished) {
    ctx.logger.warn({ heartbeatId: id }, 'heartbeat taken over: its reply is not delivered');
    return { served: false, more: false };
  }
  if (!ack) await ctx.delivery.deliver(id);
  ctx.logger.info({ heartbeatId: id, reason: input.reason, events: seqs.length, ack }, 'heartbeat');
  return { served: true, more: (input.servesNow && more) || step.next };
}

/**
 * The turn, a runner that throws (a defect, or events no check foresaw) taken as a refusal:
 * the heartbeat's record ends failed and the events go through the isolation of refused
 * events, instead of the record staying running and the same events meeting the same throw
 * at every heartbeat.
 */
async function askGuarded(
  ctx: TurnContext,
  input: TurnInput,
  message: string,
  history: RunRequest['history'],
): Promise<RunResult> {
  try {
    return await ask(ctx, input, message, history);
  } catch (err) {
    // The record names the kind only (it is shown with the events); the log, what errorText
    // allows of it.
    const kind = errorKind(err);
    ctx.logger.error({ heartbeatId: input.id, err: errorText(err) }, 'heartbeat runner threw');
    return { status: 'error', reason: `hookgate error while running the turn (${kind})` };
  }
}

/** The runner's turn over `message`, its process group recorded as it starts. */
function ask(ctx: TurnContext, input: TurnInput, message: string, history: RunRequest['history']) {
  return input.agent.runner.run(
    {
      kind: 'heartbeat',
      runId: input.id,
      agentId: input.agent.id,
      sessionKey: ctx.settings.mainKey,
      message,
      model: input.agent.model ?? null,
      thinking: null,
      timeoutSeconds: input.agent.timeoutSeconds,
      history,
    },
    {
      signal: ctx.signal,
      onSpawn: (pgid) => {
        ctx.store
          .setHeartbeatGroup(input.id, pgid)
          .catch((err: unknown) =>
            ctx.logger.error({ err: (err as Error).message }, 'heartbeat runner not recorded'),
          );
      },
    },
  );
}

/** A turn not answered: the record failed, a refused event set aside, the narrowing told. */
async function endFailed(
  ctx: TurnContext,
  input: TurnInput,
  turn: {
    seqs: number[];
    more: boolean;
    step: IsolationStep;
    outcome: TurnOutcome;
    status: string;
    reason: string;
  },
): Promise<TurnEnd> {
  // The events stay pending, but one refused alone twice, with a turn answered between.
  const setAside = turn.step.setAside.length > 0;
  // A heartbeat that ran and failed served the operator's request too: it was the one asked.
  const ended = await ctx.store.finishHeartbeat(input.id, {
    state: 'failed',
    events: turn.seqs,
    error: setAside
      ? `event set aside (refused alone twice, others answered between): ${turn.reason}`
      : turn.reason,
    ...(setAside && { setAside: turn.step.setAside }),
    answers: input.answers,
  });
  ctx.logger.warn(
    { heartbeatId: input.id, status: turn.status, reason: turn.reason },
    'heartbeat failed',
  );
  if (setAside)
    ctx.logger.warn({ heartbeatId: input.id, events: turn.step.setAside }, 'event set aside');
  if (turn.outcome === 'not-run') return { served: ended, more: false };
  ctx.followUp.refused(turn.step);
  // With the refused event out of the way, the backlog goes on as after an answered turn.
  return { served: ended, more: setAside && input.servesNow && turn.more };
}

/**
 * The heartbeat gave its turn up before it started, the lead lost: its record is failed
 * (nothing consumed) and a request for a heartbeat now goes to the leader.
 */
async function leadLost(ctx: TurnContext, input: TurnInput): Promise<TurnEnd> {
  await ctx.store.finishHeartbeat(input.id, {
    state: 'failed',
    events: [],
    error: 'not run: another instance took the lead before its turn started',
  });
  ctx.logger.warn({ heartbeatId: input.id }, 'heartbeat not run: the lead moved');
  if (input.servesNow) ctx.forward?.(input.reason);
  return { served: false, more: false };
}
