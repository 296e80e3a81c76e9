/**
 * The ledger the replay-check and commit stages keep: a request with a key
 * (a sender's delivery id or a caller's idempotency key) holds that key from
 * the replay check until it is answered, so a concurrent repeat waits and
 * then finds the first answer; a commit stores the actions and the key's
 * record together, durably, before the 200 is written. The look-up is a
 * fast first answer; the commit checks the keys again in the same atomic
 * step as the insert, so another process sharing the store that stored a
 * key in between is found there and nothing is stored twice.
 */
import type { Action } from '../schemas/action.ts';
import type { Accepted } from './actions.ts';
import { HookError } from './errors.ts';
import { testFaults } from './faults.ts';
import { actionsCommitted } from './observe/events.ts';
import type { ActionStore, AppendOutcome, IdempotencyRecord } from './queue/action-store.ts';

/** A key that makes a repeat of a request a replay, and how long it is remembered. */
export type KeyClaim = {
  key: string;
  /** Set for caller-chosen keys: the same key with another request is a conflict. */
  fingerprint?: string;
  windowMs: number;
};

/** Keys held by one request: what any of them answered before (if anything), and their release. */
export type HeldKey = { previous: IdempotencyRecord | undefined; release(): void };

/** A commit's result: the 200 body stored, or the record of a key stored first by someone else. */
export type Committed =
  | { body: string; previous?: undefined }
  | { body?: undefined; previous: IdempotencyRecord };

export type Ledger = {
  /** Wait until no earlier request holds any of the keys, then hold them. */
  hold(claims: readonly KeyClaim[]): Promise<HeldKey>;
  /** Store the actions (and every key's record) durably, unless a key was stored meanwhile. */
  commit(accepted: Accepted, claims: readonly KeyClaim[]): Promise<Committed>;
};

/** The ledger over a durable store. */
export function createLedger(
  store: ActionStore,
  options: { now?: () => number; afterCommit?: (actions: readonly Action[]) => void } = {},
): Ledger {
  const now = options.now ?? Date.now;
  // The newest holder of each key; a later request waits for it to be answered.
  const held = new Map<string, Promise<void>>();

  /** Hold one key: registered synchronously, so no request slips between look-up and commit. */
  function take(key: string): { before: Promise<void> | undefined; release: () => void } {
    const before = held.get(key);
    let resolve!: () => void;
    const turn = new Promise<void>((done) => {
      resolve = done;
    });
    held.set(key, turn);
    return {
      before,
      release() {
        resolve();
        if (held.get(key) === turn) held.delete(key);
      },
    };
  }

  return {
    async hold(claims) {
      const takes = claims.map((claim) => take(claim.key));
      const release = () => {
        for (const t of takes) t.release();
      };
      try {
        for (const t of takes) if (t.before) await t.before;
        for (const claim of claims) {
          const previous = await store.findIdempotency(claim.key, now() - claim.windowMs);
          if (previous) return { previous, release };
        }
        return { previous: undefined, release };
      } catch (err) {
        release();
        throw unavailable(err);
      }
    },
    async commit(accepted, claims) {
      const response = JSON.stringify(accepted.response);
      const createdAtMs = now();
      const actionId = accepted.actions[0]?.id ?? '';
      const idempotency = claims.map((claim) => ({
        key: claim.key,
        fingerprint: claim.fingerprint ?? '',
        actionId,
        response,
        createdAtMs,
        notBeforeMs: createdAtMs - claim.windowMs,
      }));
      if (testFaults.has('ack-before-commit')) {
        // A negative control of the kill test only: answer before the store has the actions.
        store.appendOrGet({ actions: accepted.actions, idempotency }).catch(() => undefined);
        return { body: response };
      }
      let outcome: AppendOutcome;
      try {
        outcome = await store.appendOrGet({ actions: accepted.actions, idempotency });
      } catch (err) {
        throw unavailable(err);
      }
      if (!outcome.stored) return { previous: outcome.previous };
      if (actionsCommitted.hasSubscribers)
        actionsCommitted.publish({ count: accepted.actions.length });
      options.afterCommit?.(accepted.actions);
      return { body: response };
    },
  };
}

function unavailable(cause: unknown): HookError {
  return new HookError('unavailable', 'The request could not be stored; nothing was accepted.', {
    cause,
  });
}
