/**
 * What the runtime needs from the store, split by job: the run queue (claim
 * the heads of sessions, finish, retry) and the session records (events,
 * history, heartbeats, deliveries, routes, operator requests). Every call is
 * asynchronous, so a backend shared by several instances fits behind it; the
 * embedded SQLite store and the PostgreSQL store implement it and run one
 * contract suite. Nothing outside the store modules writes SQL.
 */
import type { Action } from '../../schemas/action.ts';
import type { ActionState } from '../queue/action-store.ts';

/** How an action ended (or why it is waiting to be retried). */
export type Outcome = {
  /** `delivering`: the turn ran; its reply is still being delivered (retries redo only the delivery). */
  status: 'ok' | 'error' | 'timeout' | 'retrying' | 'delivering';
  reply?: string;
  reason?: string;
  ack?: boolean;
  delivery?: DeliveryProgress;
  /** Starts given up in a row because the run's lease may have lapsed (their attempts given back). */
  lapses?: number;
};

/** Where a reply's delivery stands. */
export type DeliveryProgress = {
  state: 'pending' | 'sent' | 'failed' | 'skipped' | 'dead';
  channel?: string;
  recipient?: string;
  parts?: number;
  partsSent?: number;
  attempts?: number;
  reason?: string;
};

export type RunRow = {
  seq: number;
  id: string;
  state: ActionState;
  attempts: number;
  nextAttemptAtMs: number;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: Outcome | null;
  action: Action;
};

/**
 * A claimed run, as the claim left it: its id and attempt number fence every later write, so
 * an instance that lost the run (its lease expired and another instance took it) changes nothing.
 */
export type Claim = Pick<RunRow, 'id' | 'attempts'>;

export type SystemEvent = {
  seq: number;
  sessionKey: string;
  text: string;
  source: string;
  actionId: string | null;
  trusted: boolean;
  createdAt: string;
  consumedBy: string | null;
  /** Consumed by a failed heartbeat: set aside, the runner refusing it (pending ones: false). */
  setAside: boolean;
};

/** What became of a request to offer a set-aside event again. */
export type Requeued =
  | { seq: number }
  | { refused: 'unknown' }
  | { refused: 'not-set-aside'; consumedBy: string | null }
  | { refused: 'requeued'; copy: number };

/** A system event to append. */
export type NewEvent = {
  sessionKey: string;
  text: string;
  source: string;
  actionId?: string;
  trusted: boolean;
};

/**
 * Whose history: an agent, a session key, and the kind of turn. The
 * heartbeat's turns (the owner's main session) and hook runs' turns stay
 * apart even on the same key, so neither reads the other's.
 */
export type TurnOwner = { agentId: string; sessionKey: string; kind: 'agent' | 'heartbeat' };

/** A run's prompt and its reply, for its agent's history in the session. */
export type RunTurns = { owner: TurnOwner; prompt: string; reply: string };

export type Turn = {
  role: 'user' | 'assistant';
  text: string;
  runId: string | null;
  createdAt: string;
};

/**
 * How many pending events a start reads at a time when it looks for a lost request for a
 * heartbeat now: the whole backlog is read, newest first, a page per query with the event loop
 * served between pages, and the read stops at the first event that asked.
 */
export const ASKED_NOW_PAGE = 1_000;

/** A heartbeat record, as `hookgate heartbeats --json` prints it. */
export type HeartbeatRow = {
  id: string;
  reason: string;
  state: 'running' | 'done' | 'failed';
  started_at: string;
  finished_at: string | null;
  events: number;
  reply: string | null;
  /** 1 when the reply was only the ack token, 0 when not, null when there was none. */
  ack: number | null;
  error: string | null;
  runner_pgid: number | null;
};

/** A delivery as recorded once it is over. */
export type DeliveryRecord = {
  source: 'agent' | 'heartbeat';
  sourceId: string;
  channel: string;
  recipient?: string;
  text: string;
  state: 'sent' | 'failed' | 'skipped' | 'dead';
  attempts: number;
  parts: number;
  partsSent: number;
  error?: string;
};

/** How a heartbeat ended. */
export type HeartbeatResult = {
  state: 'done' | 'failed';
  /** The events it included (consumed when it is done). */
  events: number[];
  /**
   * Events a failed heartbeat sets aside: consumed by it, so no later heartbeat takes them (the
   * runner refused each alone twice while it answered others); their text is kept.
   */
  setAside?: number[];
  /** Operators' requests for a heartbeat it served: answered with its end, in the same write. */
  answers?: number[];
  reply?: string;
  ack?: boolean;
  error?: string;
  /** Its prompt and reply for the heartbeat's history: written only with an end that takes. */
  turns?: RunTurns;
  /** The reply is to be delivered: recorded as due with the end, so a restart still sends it. */
  deliver?: boolean;
};

/**
 * A heartbeat reply still to be delivered: its next attempt may start at `dueAtMs`; one in
 * flight was claimed at `claimedAtMs` (null when none is).
 */
export type PendingHeartbeatDelivery = { id: string; dueAtMs: number; claimedAtMs: number | null };

/** How far a heartbeat reply's delivery got: the parts sent, and where they went once known. */
export type DeliveryPartsSent = {
  partsSent: number;
  target?: { channel: string; recipient: string };
};

/**
 * One attempt at delivering a heartbeat's reply, as its claim left it: `claim` (a number that
 * only grows) fences every later write, so an instance whose attempt was taken over changes
 * nothing; `attempts` counts the attempts that count (a refunded one does not).
 */
export type HeartbeatDeliveryClaim = {
  id: string;
  reply: string;
  claim: number;
  attempts: number;
  partsSent: number;
  /** Where the parts already sent went: the rest follow them there. */
  target: { channel: string; recipient: string } | null;
};

/** The action queue and the run lifecycle. */
export interface RunQueue {
  /**
   * Claim up to `room` runnable actions, oldest session head first, skipping the sessions in
   * `busy`: each becomes running (one more attempt) under this instance's lease. At most one
   * action of a session runs at a time, whatever the number of instances.
   */
  claimHeads(room: number, busy: ReadonlySet<string>): Promise<RunRow[]>;
  /**
   * Where the store runs its writes and claims in the order asked (one connection): claim the
   * session's next run, its head if queued and due, in the transaction of the writes asked
   * before (the end of the session's current run). Undefined when there is none, when an
   * action of the session is still running (the current run's end did not take), or when an
   * older head of another session waits (the pass gives the slot to the oldest head).
   */
  claimNext?(sessionKey: string): Promise<RunRow | undefined>;
  /**
   * Where the store runs its writes and claims in the order asked (one connection): claimHeads
   * in the transaction of the writes asked before (the end of a run), so the pages both touch
   * are written once. Absent elsewhere: a claim asked with an end could run before it and take
   * over the very run being ended (its lease lapsed).
   */
  claimHeadsAfterEnd?(room: number, busy: ReadonlySet<string>): Promise<RunRow[]>;
  /**
   * Apply up to `limit` queued wakes, oldest first, in one transaction: each appends its text to
   * `mainKey` as an event and is done. Returns how many were applied and their modes.
   */
  applyWakes(
    mainKey: string,
    limit: number,
  ): Promise<{ applied: number; modes: Array<'now' | 'next-heartbeat'> }>;
  /** Whether a wake is pending or a session's head may run now. */
  hasRunnable(): Promise<boolean>;
  /**
   * When the runtime should next look for runs it has no timer for (ms since the epoch), or null:
   * the next head still waiting for its backoff (a run requeued with a delay by an earlier
   * process), or now when the last claim pass left due heads unread (it ends unreadable rows in
   * bounded steps). Only where the runtime does not poll (`watchOutside`).
   */
  nextDueAtMs?(): Promise<number | null>;
  /** Record the process group of a run's runner (ended when the run is taken over after a crash). */
  setRunnerGroup(claim: Claim, pgid: number | null): Promise<void>;
  /**
   * Final outcome, with the summary event it posts, the turns it adds to history and its
   * delivery's record, in one transaction: a crash leaves all of it or none, so a run done
   * again never repeats its turns or its delivery's record. False: the run was lost (nothing
   * written).
   */
  finish(
    claim: Claim,
    state: 'done' | 'failed' | 'dead',
    outcome: Outcome,
    event?: NewEvent,
    turns?: RunTurns,
    delivery?: DeliveryRecord,
  ): Promise<boolean>;
  /**
   * Save progress while a run goes on (e.g. parts already delivered), with the turns the run
   * adds to history when given (one transaction). False: the run was lost (nothing written).
   */
  saveOutcome(claim: Claim, outcome: Outcome, turns?: RunTurns): Promise<boolean>;
  /**
   * Back to the queue, to run again `delayMs` from now by the store's clock (every instance
   * agrees on it). `refundAttempt`: an attempt the instance's own shutdown interrupted.
   */
  requeue(
    claim: Claim,
    delayMs: number,
    outcome: Outcome,
    options?: { refundAttempt?: boolean },
  ): Promise<boolean>;
  /**
   * Keep the leases of the runs this instance is running (a no-op where one process owns the
   * store). Only those: a run it no longer runs (its end could not be recorded) must expire,
   * so that it is taken over instead of holding its session back.
   */
  renewLeases(running: readonly Claim[]): Promise<void>;
  /**
   * Where instances share the store: whether this instance's lease on a run it claimed surely
   * still holds, by this process's own clock from when the claim, or the last renewal that kept
   * it, was sent (a stalled process, or a store down for longer than the lease, may have lost
   * the run to another instance meanwhile). `reserve` is the share of the lease that must still
   * be left (0.1 unless given). Absent where one process owns the store.
   */
  holdsLease?(claim: Claim, reserve?: number): boolean;
  /** Where leases are held: how often a turn in progress asks `holdsLease`, in ms. */
  readonly leaseWatchMs?: number;
  /**
   * At start: runs a previous process left running that this process takes over, with their
   * runner process groups (to end before running them again).
   */
  recoverInterrupted(): Promise<Array<{ id: string; pgid: number | null }>>;
  /** Runs, newest first, optionally in one state. */
  runs(limit: number, state?: ActionState): Promise<RunRow[]>;
  /** One run by id. */
  run(id: string): Promise<RunRow | undefined>;
  /** The states of these actions (those that exist). */
  states(ids: readonly string[]): Promise<Map<string, ActionState>>;
  /** How many actions are in each state (every state present): the queue's depth. */
  countByState(): Promise<Record<ActionState, number>>;
  /** A dead (or, when asked, failed) action back to the queue with fresh attempts; false otherwise. */
  retryDead(id: string, options?: { failed?: boolean }): Promise<boolean>;
  /**
   * Delete actions that finished (done, failed, dead) longer than `olderThanMs` ago, in short
   * batches; returns how many. A store that keeps every run deletes nothing.
   */
  pruneFinished(olderThanMs: number): Promise<number>;
}

/** The runtime's session records and the operator's requests. */
export interface SessionStore {
  addEvent(event: NewEvent): Promise<void>;
  /** Events no heartbeat has consumed yet, oldest first. */
  pendingEvents(sessionKey: string, limit: number): Promise<SystemEvent[]>;
  /**
   * The UTF-8 size of the text of each of the oldest pending events as stored, oldest first:
   * what a heartbeat weighs before it reads any text (the texts are not read).
   */
  pendingSizes(sessionKey: string, limit: number): Promise<{ seq: number; bytes: number }[]>;
  /**
   * Whether a pending event of the session came from an action that asked for a heartbeat now
   * (a wake with `mode: now`, an agent run with `wakeMode: now`). That request lives in memory:
   * a process that starts, or an instance that takes the lead, asks again for one. Reads every
   * pending event, newest first, ASKED_NOW_PAGE per query, the event loop served between them;
   * false once `signal` aborts.
   */
  pendingAskedNow(sessionKey: string, signal?: AbortSignal): Promise<boolean>;
  /** Events of a session, newest first (pending and consumed). */
  events(sessionKey: string, limit: number): Promise<SystemEvent[]>;
  /**
   * Offer a set-aside event again: a copy of it (session, text as stored, source, trust, action)
   * is appended as a new pending event; refused for an event that is not set aside, or that has
   * a copy already (a later event the same in all of those), so that a command run twice does
   * not offer it twice.
   */
  requeueEvent(seq: number): Promise<Requeued>;
  /** The last turns of one agent in one session, oldest first (never another agent's or kind's). */
  history(owner: TurnOwner, limit: number): Promise<Turn[]>;
  /** The UTF-8 size of the text of each of the last turns, newest first (the texts are not read). */
  historySizes(owner: TurnOwner, limit: number): Promise<number[]>;
  /** Append a prompt and its reply to an agent's history in a session. */
  addTurns(owner: TurnOwner, runId: string, prompt: string, reply: string): Promise<void>;
  /** Heartbeat turns stored before history had an owner go to the agent that runs heartbeats. */
  claimHeartbeatTurns(agentId: string): Promise<void>;
  /** Open a heartbeat record; returns its id. */
  startHeartbeat(reason: string): Promise<string>;
  /** Record the process group of a heartbeat's runner. */
  setHeartbeatGroup(id: string, pgid: number | null): Promise<void>;
  /**
   * Heartbeats left running by a previous leader (every running one but `keep`, this instance's
   * own) are failed (their events stay pending), and reply deliveries it had in flight become
   * due again; returns their ids with their runner groups (this host's).
   */
  recoverHeartbeats(keep?: readonly string[]): Promise<Array<{ id: string; pgid: number }>>;
  /**
   * Close a heartbeat record; on success mark the events it included as consumed (on failure,
   * only those it sets aside).
   */
  finishHeartbeat(id: string, result: HeartbeatResult): Promise<boolean>;
  /** Heartbeat records, newest first. */
  heartbeats(limit: number): Promise<HeartbeatRow[]>;
  /** Heartbeat replies still to be delivered, in the order of their ids, after `afterId` if given. */
  pendingHeartbeatDeliveries(limit: number, afterId?: string): Promise<PendingHeartbeatDelivery[]>;
  /**
   * Start the next attempt at delivering a heartbeat's reply: only when it is due at `nowMs`
   * and no attempt is in flight, or the one in flight was claimed (or last kept its progress) at
   * or before `staleBeforeMs` (its instance is taken for dead); undefined otherwise, or when the
   * delivery is over.
   */
  claimHeartbeatDelivery(
    id: string,
    nowMs: number,
    staleBeforeMs: number,
  ): Promise<HeartbeatDeliveryClaim | undefined>;
  /**
   * Keep an attempt's progress: the parts sent so far (and where they went), its lease renewed
   * from now; with `retry`
   * the attempt ends and the next is due at `retry.atMs` (`refund`: the attempt did not count,
   * as when shutdown interrupted it). False when the attempt is no longer this claim's.
   */
  saveHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    progress: DeliveryPartsSent,
    retry?: { atMs: number; refund?: boolean },
  ): Promise<boolean>;
  /**
   * End a heartbeat reply's delivery with its final record and, for a failure, the main
   * session's note of it, in one transaction; false (nothing written) when the attempt is no
   * longer this claim's.
   */
  endHeartbeatDelivery(
    claim: HeartbeatDeliveryClaim,
    record: DeliveryRecord,
    note?: NewEvent,
  ): Promise<boolean>;
  /** Record a delivery's final outcome (sent, failed, skipped or dead); returns its id. */
  recordDelivery(delivery: DeliveryRecord): Promise<string>;
  /** The session's last route (channel and recipient), if any. */
  lastRoute(sessionKey: string): Promise<{ channel: string; recipient: string } | undefined>;
  /** Record where the session was last reached; `onlyIfMissing` seeds without overwriting. */
  setRoute(
    sessionKey: string,
    channel: string,
    recipient: string,
    onlyIfMissing?: boolean,
  ): Promise<void>;
  /** Ask the running server for something (a heartbeat now, a reload); returns its number. */
  request(kind: string): Promise<number>;
  /**
   * Where one process owns the store: `listener` hears of each change another process (the
   * command line) made and announced (a request, a run sent back); returns the stop. Throws
   * when changes cannot be watched. Absent where other instances write unannounced: there the
   * runtime polls.
   */
  watchOutside?(listener: () => void, onError: (err: Error) => void): () => void;
  /** True once a running server has taken the request. */
  requestTaken(seq: number): Promise<boolean>;
  /** Take back a request nobody took (so a later start does not act on it); false if taken. */
  withdrawRequest(seq: number): Promise<boolean>;
  /** Record a request's answer (what the command that asked waits for). */
  answerRequest(seq: number, result: string): Promise<void>;
  /** A request's answer, once the server has given it. */
  requestResult(seq: number): Promise<string | undefined>;
  /** Requests not yet taken, oldest first; marks them taken (each by one instance only). */
  takeRequests(): Promise<Array<{ seq: number; kind: string }>>;
  /**
   * The newest operator request for a heartbeat when it was taken but never answered (the
   * heartbeat it asked for did not end: its instance died first); undefined otherwise. Only the
   * newest is read: a heartbeat that served it served every older one too.
   */
  heartbeatRequestUnserved(): Promise<number | undefined>;
}

/**
 * Leadership for work one instance does at a time (the heartbeat). Where one process owns the
 * store it always leads; on a shared store a lease decides, and another instance takes over
 * within a lease's time when the leader dies.
 */
export interface Leadership {
  /** Take or keep the lead; true while this instance leads. */
  lead(): Promise<boolean>;
  /** Give the lead up (at shutdown), so another instance takes over at once. */
  resign(): Promise<void>;
}

/**
 * The heartbeat lead's lease: held (a leader that died keeps the lead for `leftMs` more), run
 * out `agoMs` ago (given up at a stop, or not renewed), none (no instance took it, or an older
 * hookgate deleted it at its stop), or no lease at all: one process owns the store.
 */
export type LeaderLease =
  | { kind: 'held'; leftMs: number }
  | { kind: 'lapsed'; agoMs: number }
  | { kind: 'none' }
  | { kind: 'sole' };

/** The runtime's store. */
export interface RuntimeStore extends RunQueue, SessionStore {
  readonly leadership: Leadership;
  /**
   * The heartbeat lead's lease by the store's clock (where one process owns the store, 'sole'):
   * what a request to the leader may have to wait for.
   */
  leaderLease(): Promise<LeaderLease>;
  close(): Promise<void>;
}
