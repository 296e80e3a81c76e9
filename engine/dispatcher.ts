/**
 * The ledger the replay-check and commit stages keep: a request with a key
 * (a sender's delivery id or a caller's idempotency key) holds that key from
 * the replay check until it is answered, so a concurrent repeat waits and
 * then finds the first answer; a commit stores the actions and the key's
 * record together, durably, before the 200 is written.
 */
import type { Accepted } from './actions.ts';
import { HookError } from './errors.ts';
import type { ActionStore, IdempotencyRecord } from './queue/action-store.ts';

/** A key that makes a repeat of a request a replay, and how long it is remembered. */
export type KeyClaim = {
  key: string;
  /** Set for caller-chosen keys: the same key with another request is a conflict. */
  fingerprint?: string;
  windowMs: number;
};

/** A key held by one request: what the key answered before (if anything), and its release. */
export type HeldKey = { previous: IdempotencyRecord | undefined; release(): void };

export type Ledger = {
  /** Wait until no earlier request holds the key, then hold it. */
  hold(claim: KeyClaim): Promise<HeldKey>;
  /** Store the actions (and the key's record) durably; resolves with the 200 body. */
  commit(accepted: Accepted, claim: KeyClaim | undefined): Promise<string>;
};

/** The ledger over a durable store. */
export function createLedger(
  store: ActionStore,
  options: { now?: () => number; afterCommit?: () => void } = {},
): Ledger {
  const now = options.now ?? Date.now;
  // The newest holder of each key; a later request waits for it to be answered.
  const held = new Map<string, Promise<void>>();

  return {
    async hold(claim) {
      const before = held.get(claim.key);
      let release!: () => void;
      const turn = new Promise<void>((resolve) => {
        release = resolve;
      });
      // Registered synchronously, so no request slips between look-up and commit.
      held.set(claim.key, turn);
      const releaseOnce = () => {
        release();
        if (held.get(claim.key) === turn) held.delete(claim.key);
      };
      try {
        if (before) await before;
        const previous = await store.findIdempotency(claim.key, now() - claim.windowMs);
        return { previous, release: releaseOnce };
      } catch (err) {
        releaseOnce();
        throw unavailable(err);
      }
    },
    async commit(accepted, claim) {
      const response = JSON.stringify(accepted.response);
      const idempotency = claim && {
        key: claim.key,
        fingerprint: claim.fingerprint ?? '',
        actionId: accepted.actions[0]?.id ?? '',
        response,
        createdAtMs: now(),
      };
      try {
        await store.append({ actions: accepted.actions, ...(idempotency && { idempotency }) });
      } catch (err) {
        throw unavailable(err);
      }
      options.afterCommit?.();
      return response;
    },
  };
}

function unavailable(cause: unknown): HookError {
  return new HookError('unavailable', 'The request could not be stored; nothing was accepted.', {
    cause,
  });
}
