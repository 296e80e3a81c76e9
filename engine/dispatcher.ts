/**
 * The ledger the replay-check and commit stages keep: a request with a key
 * (a sender's delivery id or a caller's idempotency key) holds that key from
 * the replay check until it is answered, so a concurrent repeat waits and
 * then finds the first answer; a commit stores the actions and the key's
 * record together, durably, before the 200 is written. The look-up is a
 * fast first answer; the commit checks the keys again in the same atomic
 * step as the insert, so another process sharing the store that stored a
 * key in between is found there and nothing is stored twice.
 *
 * What waits for a held key is bounded: a key's holder may take seconds (a
 * transform call behind a full queue), and pipelined or concurrent copies
 * behind it cost nothing to send; past MAX_KEY_WAITERS requests or
 * MAX_KEY_WAITING_BYTES of their bodies a copy is refused at once (503).
 */
import type { Action } from '../schemas/action.ts';
import type { Accepted } from './actions.ts';
import { HookError } from './errors.ts';
import { testFaults } from './faults.ts';
import { actionsCommitted } from './observe/events.ts';
import {
  type ActionStore,
  AppendInDoubt,
  type AppendOutcome,
  type IdempotencyRecord,
} from './queue/action-store.ts';

/** A key that makes a repeat of a request a replay, and how long it is remembered. */
export type KeyClaim = {
  key: string;
  /** Set for caller-chosen keys: the same key with another request is a conflict. */
  fingerprint?: string;
  windowMs: number;
};

/** Requests that may wait for a key another request holds, in all. */
export const MAX_KEY_WAITERS = 256;

/** Bytes of body those waiting requests may hold in all (a lone waiter always may). */
export const MAX_KEY_WAITING_BYTES = 32 * 1024 * 1024;

/** A request that would wait: the bytes it holds meanwhile, and what it drops before waiting. */
export type Waiter = { bytes: number; waits(): void };

// Built once: a flood of copies past the bound allocates nothing per refusal.
const KEYS_BUSY = new HookError(
  'unavailable',
  'Too many requests are waiting for an earlier copy of theirs to be answered; retry later.',
  { headers: { 'retry-after': '1' } },
);

/** Keys held by one request: what any of them answered before (if anything), and their release. */
export type HeldKey = { previous: IdempotencyRecord | undefined; release(): void };

/** A commit's result: the 200 body stored, or the record of a key stored first by someone else. */
export type Committed =
  | { body: string; previous?: undefined }
  | { body?: undefined; previous: IdempotencyRecord };

export type Ledger = {
  /**
   * Wait until no earlier request holds any of the keys, then hold them. A request that must
   * wait is told first (`waiter.waits`), or refused 503 past the waiting bound.
   */
  hold(claims: readonly KeyClaim[], waiter?: Waiter): Promise<HeldKey>;
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
  // Requests waiting for a key, and the bytes they hold.
  let waiters = 0;
  let waitingBytes = 0;

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
    async hold(claims, waiter) {
      const bytes = waiter?.bytes ?? 0;
      // Decided before any key is taken: a refused copy must not stand in the queue of a key,
      // where its release would let the copies behind it past the request still holding it.
      const waits = claims.some((claim) => held.has(claim.key));
      if (waits && !mayWait(waiters, waitingBytes, bytes)) throw KEYS_BUSY;
      const takes = claims.map((claim) => take(claim.key));
      const release = () => {
        for (const t of takes) t.release();
      };
      try {
        if (waits) {
          waiters++;
          waitingBytes += bytes;
          waiter?.waits();
          try {
            for (const t of takes) if (t.before) await t.before;
          } finally {
            waiters--;
            waitingBytes -= bytes;
          }
        }
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
        throw err instanceof AppendInDoubt ? inDoubt(err) : unavailable(err);
      }
      if (!outcome.stored) return { previous: outcome.previous };
      if (actionsCommitted.hasSubscribers)
        actionsCommitted.publish({ count: accepted.actions.length });
      options.afterCommit?.(accepted.actions);
      return { body: response };
    },
  };
}

function mayWait(waiters: number, heldBytes: number, bytes: number): boolean {
  if (waiters >= MAX_KEY_WAITERS) return false;
  return waiters === 0 || heldBytes + bytes <= MAX_KEY_WAITING_BYTES;
}

/** Not "nothing was accepted": a request sent again without a key could then run twice. */
function inDoubt(cause: unknown): HookError {
  return new HookError(
    'unavailable',
    'The store did not confirm the request: it may have been accepted. Send it again with the same Idempotency-Key, or check before sending it again.',
    { cause },
  );
}

function unavailable(cause: unknown): HookError {
  return new HookError('unavailable', 'The request could not be stored; nothing was accepted.', {
    cause,
  });
}
