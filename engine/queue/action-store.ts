/**
 * The interface of the durable action store: what the dispatcher needs to
 * accept an action (and its idempotency record) durably, and what the
 * `actions` command reads. The embedded implementation is SQLite; another
 * backend implements the same interface and runs the same contract suite.
 */
import type { Action } from '../../schemas/action.ts';

/** What an idempotency key remembers: the first request's fingerprint and answer. */
/** Keys kept longer than the rest: the mail flow's, back to what its fallback may read again. */
export type KeepKeys = { prefix: string; sinceMs: number };

export type IdempotencyRecord = {
  key: string;
  fingerprint: string;
  /** The first action's id (a fan-out stores several). */
  actionId: string;
  /** The JSON body of the first 200 answer. */
  response: string;
  createdAtMs: number;
};

/** A key to store with a request: a record older than `notBeforeMs` has expired and is replaced. */
export type NewIdempotencyRecord = IdempotencyRecord & { notBeforeMs: number };

/**
 * One accepted request: its actions and its keys' records (a delivery id, the signed content, a
 * caller's key), all stored or none.
 */
export type AcceptedRecord = {
  actions: readonly Action[];
  idempotency?: readonly NewIdempotencyRecord[];
};

/**
 * What an append did: stored everything, or stored nothing because one of the keys was already
 * held by an earlier request (whose record is returned, for its first answer or a conflict).
 */
export type AppendOutcome = { stored: true } | { stored: false; previous: IdempotencyRecord };

/**
 * An append whose outcome the store could not learn (its COMMIT went unconfirmed and the store
 * could not be asked afterwards): the actions may have been stored.
 */
export class AppendInDoubt extends Error {
  constructor(cause: unknown) {
    super('the store did not confirm whether the request was stored', { cause });
    this.name = 'AppendInDoubt';
  }
}

/** Lifecycle state of a stored action. */
export type ActionState = 'queued' | 'running' | 'done' | 'failed' | 'dead';

/** Every state an action can be in, in lifecycle order. */
export const ACTION_STATES: readonly ActionState[] = [
  'queued',
  'running',
  'done',
  'failed',
  'dead',
];

/** An action as the store holds it. */
export type StoredAction = { seq: number; state: ActionState; attempts: number; action: Action };

export interface ActionStore {
  /**
   * Check the keys and store the record in one atomic step: when any key has a live record
   * (created at or after its `notBeforeMs`), nothing is stored and that record is returned;
   * otherwise everything is. Resolves once committed durably; rejects if it was not stored.
   * Atomic across every process sharing the store, so two instances never both store one key.
   */
  appendOrGet(record: AcceptedRecord): Promise<AppendOutcome>;
  /** The idempotency record for a key, if created at or after `notBeforeMs` (a fast first look). */
  findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined>;
  /**
   * Forget idempotency records older than `beforeMs`, but those whose key starts with
   * `keep.prefix` only when older than `keep.sinceMs` too; returns how many.
   */
  pruneIdempotency(beforeMs: number, keep?: KeepKeys): Promise<number>;
  /** Accepted actions, newest first. */
  listActions(options: { limit: number }): Promise<StoredAction[]>;
  /**
   * Where the store can, apply wakes as they are stored from now on: each appends its event to
   * `sessionKey` in the same transaction and is stored done, leaving the runtime nothing to do
   * for it (null: wakes stay queued for the runtime). Absent: the runtime applies them.
   */
  applyWakesOnAccept?(sessionKey: string | null): void;
  /** Commit what is pending and release the store. */
  close(): Promise<void>;
}
