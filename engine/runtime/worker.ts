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
 * run to another changes nothing. One run's work is run-step.ts; when the
 * store is looked at for work this process did not start, store-watch.ts.
 */
import { errorText } from '../observe/error-text.ts';
import { endStaleGroup } from './runners/stale-group.ts';
import type { Claim, Outcome, RunRow } from './runtime-store.ts';
import { createRunStep, type RunSettings, type RunStepDeps } from './run-step.ts';
import { startStoreWatch, type StoreWatch } from './store-watch.ts';
import { isRunnableAction } from './stored-runs.ts';

export type WorkerSettings = RunSettings & {
  concurrency: number;
  /**
   * How often the store is polled for due retries, other instances' work and requests, where it
   * does not announce changes (`watchOutside`); where it does, the first delay before a look that
   * failed is tried again.
   */
  pollMs: number;
};

// What a claimed run that never started keeps as its outcome when given back (none before).
const NOT_STARTED: Outcome = {
  status: 'retrying',
  reason: 'the server stopped before the run started',
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

/** What the worker needs: what a run needs (run-step.ts), its own settings and requests. */
export type WorkerDeps = Omit<RunStepDeps, 'settings' | 'stopped' | 'kick'> & {
  settings: WorkerSettings;
  /** Other operator requests (a reload); the handler answers them in the store. */
  onRequest?: (kind: string, seq: number) => void;
  /** Whether this instance leads (takes operator requests); always where one process owns the store. */
  leading?: () => boolean;
};

/** Create the worker over the runtime store. */
export function createActionWorker(deps: WorkerDeps): ActionWorker {
  const { store, heartbeat, settings, logger } = deps;
  // One run's work: its turn, its reply's delivery, its end or retry.
  const execute = createRunStep({
    ...deps,
    stopped: () => stopped,
    kick: () => kick(),
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
    for (const claimed of claims) startSlot(claimed);
    if (claims.length < room) await watch?.roomLeft();
  }

  /** The slot a claimed row runs in: its session's. */
  function slotOf(claimed: RunRow): string {
    const action: unknown = claimed.action;
    // A row that holds no action a run can take is ended by execute(), in a slot of its own.
    if (!isRunnableAction(action)) return `unreadable:${claimed.id}`;
    return action.kind === 'agent' ? action.sessionKey : '';
  }

  /** Run a claimed head in a slot of its own (or give it back when the worker has stopped). */
  function startSlot(claimed: RunRow): void {
    const session = slotOf(claimed);
    const work = (stopped ? giveBack(claimed) : runSession(session, claimed)).finally(() => {
      busy.delete(session);
      kick();
    });
    busy.set(session, work);
  }

  /**
   * A run claimed while the worker stopped goes back to the queue unstarted, its attempt given
   * back and its outcome kept (a reply still to deliver stays one).
   */
  async function giveBack(claimed: RunRow): Promise<void> {
    running.delete(claimed.id);
    try {
      await store.requeue(claimed, 0, claimed.outcome ?? NOT_STARTED, { refundAttempt: true });
    } catch (err) {
      // Left running: after a restart (or its lease, where instances share the store) it runs.
      logger.error({ actionId: claimed.id, err: (err as Error).message }, 'claim not given back');
    }
  }

  /** A claim made with a run's end: its lease from the claim on, as a pass's claims. */
  function leased<T extends RunRow | undefined>(claimed: T): T {
    if (claimed) running.set(claimed.id, { id: claimed.id, attempts: claimed.attempts });
    return claimed;
  }

  /**
   * Run a session's claimed action, then, while it has more and no older head of another
   * session waits, its next one: claimed in the transaction that ends the one before (where
   * the store allows), with no pass over every session's heads. With every slot taken, the
   * slot goes to the oldest head of a session not running elsewhere (this one's next run
   * included), claimed in that same transaction where the store allows: the pages both writes
   * touch (the queue's index, the actions around the oldest ones) go to the log once.
   * Otherwise the next pass gives the slot, and fills any room left.
   */
  async function runSession(session: string, first: RunRow): Promise<void> {
    let row: RunRow | undefined = first;
    while (row) {
      const current: RunRow = row;
      running.set(current.id, { id: current.id, attempts: current.attempts });
      let next: Promise<RunRow | undefined> | undefined;
      let handedOver: Promise<RunRow[]> | undefined;
      const failed = (err: unknown) => {
        logger.error({ stage: 'next run', err: (err as Error).message }, 'worker pass failed');
        return undefined;
      };
      const ended = () => {
        if (stopped) return;
        if (busy.size >= settings.concurrency) {
          // A slot whose first run ended before the slot was even registered (a row no run can
          // take, ended at once) leaves the choice to the pass: the slot that handed it over
          // still counts as busy, and its session's next run may be the oldest head.
          if (!store.claimHeadsAfterEnd || !busy.has(session)) return;
          // The oldest head of a session that no other slot runs: this one's run has ended.
          const others = new Set(busy.keys());
          others.delete(session);
          handedOver = store.claimHeadsAfterEnd(1, others).then(
            (claims) => claims.map(leased),
            (err: unknown) => {
              failed(err);
              return [];
            },
          );
          return;
        }
        // The store decides whether an older head of another session waits.
        if (!store.claimNext || session === '') return;
        next = store.claimNext(session).then(leased, failed);
      };
      try {
        await execute(current, ended);
      } catch (err) {
        logger.error({ actionId: current.id, err: errorText(err) }, 'action crashed');
      }
      running.delete(current.id);
      let own: RunRow | undefined;
      for (const claimed of (await handedOver) ?? []) {
        if (slotOf(claimed) === session) own = claimed;
        else startSlot(claimed);
      }
      row = own ?? (await next);
      if (row && stopped) {
        await giveBack(row);
        return;
      }
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
      if (kind === 'heartbeat') heartbeat.requestFor(seq);
      else deps.onRequest?.(kind, seq);
    }
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
        if (pgid !== null) endStaleGroup(pgid, id);
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
      // A slot handed over with a run's end may start while the others finish.
      while (busy.size > 0) await Promise.allSettled(busy.values());
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
