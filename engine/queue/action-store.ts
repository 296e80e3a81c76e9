/**
 * The interface of the durable action store: what the dispatcher needs to
 * accept an action (and its idempotency record) durably, and what the
 * `actions` command reads. The embedded implementation is SQLite; another
 * backend implements the same interface and runs the same contract suite.
 */
import type { Action } from '../../schemas/action.ts';

/** What an idempotency key remembers: the first request's fingerprint and answer. */
export type IdempotencyRecord = {
  key: string;
  fingerprint: string;
  /** The first action's id (a fan-out stores several). */
  actionId: string;
  /** The JSON body of the first 200 answer. */
  response: string;
  createdAtMs: number;
};

/**
 * One accepted request: its actions and its keys' records (a delivery id, the signed content, a
 * caller's key), all stored or none.
 */
export type AcceptedRecord = {
  actions: readonly Action[];
  idempotency?: readonly IdempotencyRecord[];
};

/** Lifecycle state of a stored action. */
export type ActionState = 'queued' | 'running' | 'done' | 'failed' | 'dead';

/** An action as the store holds it. */
export type StoredAction = { seq: number; state: ActionState; attempts: number; action: Action };

export interface ActionStore {
  /** Resolves once the record is committed durably (fsync'd); rejects if it was not stored. */
  append(record: AcceptedRecord): Promise<void>;
  /** The idempotency record for a key, if created at or after `notBeforeMs`. */
  findIdempotency(key: string, notBeforeMs: number): Promise<IdempotencyRecord | undefined>;
  /** Forget idempotency records older than `beforeMs`; returns how many. */
  pruneIdempotency(beforeMs: number): Promise<number>;
  /** Accepted actions, newest first. */
  listActions(options: { limit: number }): Promise<StoredAction[]>;
  /** Commit what is pending and release the store. */
  close(): Promise<void>;
}
