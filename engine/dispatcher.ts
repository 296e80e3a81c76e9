/**
 * The dispatcher's accepting side: commit an action durably before its 200
 * is written, and honour idempotency keys. A repeat of a key within the
 * window returns the first answer and stores nothing; the same key with a
 * different request is 409. Concurrent repeats wait for the first to settle.
 */
import type { Accepted } from './actions.ts';
import { HookError } from './errors.ts';
import type { ActionStore, IdempotencyRecord } from './queue/action-store.ts';

/** The answer to an accepted request: a 200 body, or null for 204 (nothing to store). */
export type Acceptance = { body: string | null; replayed: boolean };

export type Dispatcher = {
  /** Store the action (durably) and return the body to answer 200 with. */
  accept(
    accepted: Accepted,
    idempotency?: { key: string; fingerprint: string },
  ): Promise<Acceptance>;
};

/** Build a dispatcher over a store. */
export function createDispatcher(
  store: ActionStore,
  options: { idempotencyWindowMs: number; now?: () => number; afterCommit?: () => void },
): Dispatcher {
  const now = options.now ?? Date.now;
  // Keys whose first request is still being committed.
  const inFlight = new Map<string, Promise<unknown>>();

  async function commit(accepted: Accepted, idempotency?: IdempotencyRecord): Promise<Acceptance> {
    if (accepted.response === null) return { body: null, replayed: false };
    try {
      await store.append({ actions: accepted.actions, ...(idempotency && { idempotency }) });
      options.afterCommit?.();
    } catch (err) {
      throw new HookError('unavailable', 'The request could not be stored; nothing was accepted.', {
        cause: err,
      });
    }
    return { body: idempotency?.response ?? JSON.stringify(accepted.response), replayed: false };
  }

  async function decide(accepted: Accepted, key: string, fingerprint: string): Promise<Acceptance> {
    const previous = await store.findIdempotency(key, now() - options.idempotencyWindowMs);
    if (previous) {
      if (previous.fingerprint !== fingerprint) throw new HookError('idempotency_conflict');
      return { body: previous.response, replayed: true };
    }
    return commit(accepted, {
      key,
      fingerprint,
      actionId: accepted.actions[0]?.id ?? '',
      response: JSON.stringify(accepted.response),
      createdAtMs: now(),
    });
  }

  async function acceptKeyed(
    accepted: Accepted,
    key: string,
    fingerprint: string,
  ): Promise<Acceptance> {
    // Chain requests sharing a key, registered synchronously so none slips between look-up and commit.
    const before = inFlight.get(key);
    const turn = (async () => {
      if (before) await before.catch(() => undefined);
      return decide(accepted, key, fingerprint);
    })();
    inFlight.set(key, turn);
    try {
      return await turn;
    } finally {
      if (inFlight.get(key) === turn) inFlight.delete(key);
    }
  }

  return {
    accept(accepted, idempotency) {
      if (!idempotency) return commit(accepted);
      return acceptKeyed(accepted, idempotency.key, idempotency.fingerprint);
    },
  };
}
