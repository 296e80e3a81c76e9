/**
 * The action worker: consumes accepted actions from the store, at least
 * once, in order per session key, several sessions in parallel, fairly: it
 * starts the oldest session heads first, so one session's backlog delays
 * only that session. Wake actions append a system event to the main session
 * at once, behind no session; agent actions run one turn
 * through the agent's runner, then post a summary into the main session and
 * hand the reply to delivery. Only work that did not happen is retried (with
 * backoff); a turn that ran and failed is final. After a crash, actions left
 * running are resumed (at once where one process owns the store, after their
 * lease where instances share it) and their old runner processes are ended.
 * Every write about a run is fenced by its claim: an instance that lost a
 * run to another changes nothing.
 */
import type { AgentAction, WakeAction } from '../../schemas/action.ts';
import type { ChannelAdapter } from '../delivery/adapter.ts';
import type { Logger } from '../log.ts';
import { type RunOutcome, runFinished } from '../observe/events.ts';
import type { AgentSettings } from './agents.ts';
import type { Heartbeat } from './heartbeat.ts';
import type { LastRoutePolicy } from './last-route.ts';
import { createDeliveryStep, lastWrite, summaryEvent } from './reply-delivery.ts';
import { isAckOnly, retryDelayMs } from './replies.ts';
import { killGroup } from './runners/command.ts';
import type { RunResult } from './runners/runner.ts';
import type { Claim, RunRow, RuntimeStore, TurnOwner } from './runtime-store.ts';
import { startStoreWatch, type StoreWatch } from './store-watch.ts';
import { isRunnableAction, UNREADABLE_OUTCOME, wakeEvent } from './stored-runs.ts';

export type WorkerSettings = {
  mainKey: string;
  concurrency: number;
  ackToken: string;
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  defaultAgentId: string;
  /**
   * How often the store is polled for due retries, other instances' work and requests, where it
   * does not announce changes (`watchOutside`).
   */
  pollMs: number;
  historyTurns: number;
  /** Who may move the main session's last route (a hook's delivery never does). */
  lastRoute: LastRoutePolicy;
};

// Wakes applied per transaction (more wait for the next pass, so one pass stays short).
const WAKE_BATCH = 500;

export type ActionWorker = {
  /** Take over what a previous process left running, then start taking work. */
  start(): Promise<void>;
  /** Look for work now (after an acceptance). */
  kick(): void;
  /**
   * The store now applies wakes as it accepts them: queued ones (wakes sent back by `retry`)
   * are looked for when the store is looked at (a ring, a poll), not at every pass.
   */
  wakesApplied(): void;
  /** Stop taking work; running turns are interrupted and go back to the queue. */
  stop(): Promise<void>;
  /** Resolves when nothing is running and nothing runnable is queued (for tests). */
  idle(): Promise<void>;
};

/** Create the worker over the runtime store. */
export function createActionWorker(deps: {
  store: RuntimeStore;
  agents: ReadonlyMap<string, AgentSettings>;
  adapters: ReadonlyMap<string, ChannelAdapter>;
  heartbeat: Heartbeat;
  settings: WorkerSettings;
  logger: Logger;
  controller: AbortController;
  /** The current default agent, when a reload may change it (else settings.defaultAgentId). */
  defaultAgentId?: () => string;
  /** Other operator requests (a reload); the handler answers them in the store. */
  onRequest?: (kind: string, seq: number) => void;
  /** Whether this instance leads (takes operator requests); always where one process owns the store. */
  leading?: () => boolean;
  /** Told when a delivery moved the main session's last route. */
  routeMoved?: (channel: string) => void;
}): ActionWorker {
  const { store, agents, adapters, heartbeat, settings, logger } = deps;
  const deliverReply = createDeliveryStep({
    store,
    adapters,
    heartbeat,
    logger,
    settings,
    signal: deps.controller.signal,
    stopped: () => stopped,
    kick: () => kick(),
    ...(deps.routeMoved && { routeMoved: deps.routeMoved }),
  });
  // The sessions this instance runs now (each one run after another in its slot).
  const busy = new Map<string, Promise<void>>();
  // The runs this instance is running, by action id: the leases it keeps.
  const running = new Map<string, Claim>();
  // One pass at a time; a kick during a pass asks for one more after it.
  let pumping: Promise<void> = Promise.resolve();
  let scheduled = false;
  let stopped = false;
  let wakesEveryPass = true;
  // When the store is looked at for work this process did not start (from start() on).
  let watch: StoreWatch | undefined;

  /**
   * Claim what may run now: the head of each session, oldest head first, up to the free
   * concurrency. A backlog in one session (or a head waiting for backoff) holds back only that
   * session; wakes are applied first, whatever the agent sessions hold.
   */
  async function pump(): Promise<void> {
    scheduled = false;
    if (stopped) return;
    // A pass that throws (a busy or full disk, a lost connection, a row it cannot read) is logged
    // and tried again later (store-watch.ts): it never ends the process, and wakes failing never
    // hold back the heads.
    if (wakesEveryPass) {
      await guarded('wakes', async () => {
        if (await applyWakes()) kick();
      });
    }
    await guarded('session heads', startHeads);
  }

  /** Run one stage of a pass or a look; one that throws is logged and looked at again later. */
  async function guarded(stage: string, pass: () => Promise<void>): Promise<void> {
    try {
      await pass();
      watch?.succeeded(stage);
    } catch (err) {
      logger.error({ stage, err: (err as Error).message }, 'worker pass failed');
      watch?.failed(stage);
    }
  }

  async function startHeads(): Promise<void> {
    const room = settings.concurrency - busy.size;
    if (room <= 0) return;
    const claims = await store.claimHeads(room, new Set(busy.keys()));
    for (const claimed of claims) {
      const action: unknown = claimed.action;
      // A row that holds no action a run can take is ended by execute(), in the wake lane.
      const session = isRunnableAction(action) && action.kind === 'agent' ? action.sessionKey : '';
      const work = runSession(session, claimed).finally(() => {
        busy.delete(session);
        kick();
      });
      busy.set(session, work);
    }
    if (claims.length < room) await watch?.roomLeft();
  }

  /**
   * Run a session's claimed action, then, while it has more and no older head of another
   * session waits, its next one: claimed in the transaction that ends the one before (where
   * the store allows), with no pass over every session's heads. Otherwise, and with every slot
   * taken, the slot goes back to the oldest head of any session, by the next pass.
   */
  async function runSession(session: string, first: RunRow): Promise<void> {
    let row: RunRow | undefined = first;
    while (row) {
      const current: RunRow = row;
      running.set(current.id, { id: current.id, attempts: current.attempts });
      let next: Promise<RunRow | undefined> | undefined;
      const ended = () => {
        // The store decides whether an older head waits; with every slot taken one nearly always
        // does, so the question is not even asked then.
        if (!store.claimNext || session === '' || stopped || busy.size >= settings.concurrency)
          return;
        next = store.claimNext(session).then(
          (claimed) => {
            // Its lease from the claim on, as a pass's claims.
            if (claimed) running.set(claimed.id, { id: claimed.id, attempts: claimed.attempts });
            return claimed;
          },
          (err: unknown) => {
            logger.error({ stage: 'next run', err: (err as Error).message }, 'worker pass failed');
            return undefined;
          },
        );
      };
      try {
        await execute(current, ended);
      } catch (err) {
        logger.error({ actionId: current.id, err: (err as Error).message }, 'action crashed');
      }
      running.delete(current.id);
      row = await next;
    }
  }

  /** Pending wakes only append events to the main session: a batch in one transaction; true when more remain. */
  async function applyWakes(): Promise<boolean> {
    const { applied, modes } = await store.applyWakes(settings.mainKey, WAKE_BATCH);
    if (modes.includes('now')) heartbeat.requestNow('wake');
    return applied === WAKE_BATCH;
  }

  function kick(): void {
    if (scheduled || stopped) return;
    scheduled = true;
    setImmediate(() => {
      pumping = pumping.then(pump);
    });
  }

  async function handleRequests(): Promise<void> {
    // Operator requests go to the leader (the one that runs heartbeats).
    if (deps.leading && !deps.leading()) return;
    for (const { seq, kind } of await store.takeRequests()) {
      if (kind === 'heartbeat') heartbeat.requestNow('requested');
      else deps.onRequest?.(kind, seq);
    }
  }

  /** Run an action; `ended` is called once its last write (end or requeue) is asked. */
  async function execute(row: RunRow, ended: () => void): Promise<void> {
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
    const result = await runTurn(row, action);
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
    const turns = {
      owner: turnOwner(action),
      prompt: action.prompt ?? action.message,
      reply: result.reply,
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

  /** History belongs to the agent that runs the turn and the session key, never the key alone. */
  const turnOwner = (action: AgentAction): TurnOwner => ({
    agentId: agentFor(action)?.id ?? action.agentId,
    sessionKey: action.sessionKey,
    kind: 'agent',
  });

  async function runTurn(row: RunRow, action: AgentAction): Promise<RunResult> {
    const agent = agentFor(action);
    if (!agent?.runner) {
      return {
        status: 'error',
        reason: `no runner is configured for agent "${action.agentId}" (agents.defaults.runner)`,
      };
    }
    return agent.runner.run(
      {
        kind: 'agent',
        runId: action.id,
        agentId: action.agentId,
        sessionKey: action.sessionKey,
        message: action.prompt ?? action.message,
        model: action.model ?? agent.model ?? null,
        thinking: action.thinking ?? null,
        timeoutSeconds: action.timeoutSeconds ?? agent.timeoutSeconds,
        history: (await store.history(turnOwner(action), settings.historyTurns)).map(
          ({ role, text }) => ({ role, text }),
        ),
        origin: {
          hook: action.hook,
          ...(action.mappingId !== undefined && { mappingId: action.mappingId }),
          untrusted: action.untrusted,
          ...(action.verification && { verification: action.verification }),
        },
      },
      {
        signal: deps.controller.signal,
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
  }

  async function retryOrGiveUp(
    row: RunRow,
    action: AgentAction,
    result: Extract<RunResult, { status: 'retry' }>,
    started: number,
    ended: () => void,
  ): Promise<void> {
    // Interrupted by our own shutdown: back to the queue, not counted against the attempts.
    if (stopped) {
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
      setTimeout(kick, delay + 5).unref();
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

  // A look at the store (a ring, a poll, a retry after a failure), one at a time: leases kept,
  // requests taken, wakes applied where acceptance does not, then a pass.
  let ticking = false;
  async function tick(): Promise<void> {
    if (ticking) return;
    ticking = true;
    try {
      if (running.size > 0) await guarded('leases', () => store.renewLeases([...running.values()]));
      else watch?.succeeded('leases');
      await guarded('requests', handleRequests);
      if (!wakesEveryPass) {
        await guarded('wakes', async () => {
          while (await applyWakes()) if (stopped) return;
        });
      }
    } finally {
      ticking = false;
    }
    kick();
  }

  return {
    async start() {
      // Actions a previous process left running: end their runner processes, then run them again.
      for (const { id, pgid } of await store.recoverInterrupted()) {
        if (pgid !== null) killGroup(pgid);
        logger.warn({ actionId: id }, 'resuming an action interrupted by a restart');
      }
      watch = startStoreWatch({
        store,
        pollMs: settings.pollMs,
        look: () => void tick(),
        pass: kick,
        logger,
      });
      // Requests written before the watch began (a command run while this process started).
      void tick();
    },
    kick,
    wakesApplied() {
      wakesEveryPass = false;
    },
    async stop() {
      stopped = true;
      watch?.stop();
      deps.controller.abort();
      await pumping;
      await Promise.allSettled(busy.values());
    },
    async idle() {
      for (;;) {
        await new Promise((resolve) => setImmediate(resolve));
        if (busy.size > 0) {
          await Promise.allSettled(busy.values());
          continue;
        }
        await pumping;
        if (!(await store.hasRunnable()) && !scheduled && busy.size === 0) return;
        kick();
      }
    },
  };
}
