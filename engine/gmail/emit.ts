/**
 * Turning one synced message into its action: the gmail preset's route
 * builds it from `{source:'gmail', messages:[message]}` (the same mapping,
 * policy and safety wrapper as a posted notification), and the ledger
 * commits it under the Gmail message id, so a message never runs twice,
 * whatever the pushes, retries and restarts.
 */
import { randomUUID } from 'node:crypto';
import type { Ledger } from '../dispatcher.ts';
import type { Envelope } from '../envelope.ts';
import type { RouteTable } from '../ingress/routes.ts';
import { MESSAGE_MEMORY_MS } from './message-memory.ts';
import type { Emit, MailItem } from './sync.ts';

/**
 * Routes held until released, with the settings of the configuration they belong to: a reload
 * neither closes what a message is being built with nor leaves the flow on the settings the
 * server started with.
 */
export type HeldRoutes = {
  readonly routes: RouteTable;
  readonly hooks: { readonly path: string; readonly deliveryRetentionSeconds: number };
  release(): void;
};

export type EmitterDeps = {
  /** The current routes, held for the time one message takes. */
  routes: () => HeldRoutes;
  ledger: Ledger;
  /**
   * Since when a message that ran must still be found, beyond the week (the fallback's start
   * after a long time without a good sync: sync.ts ledgerFloorMs); undefined: the week does.
   */
  keptSinceMs?: () => number | undefined;
};

/** What the ledger keys of messages that ran start with. */
export const MESSAGE_KEY_PREFIX = 'gmail-message:';

/** The ledger key a message runs under, looked up as far back as the fallback may read. */
function messageClaim(deps: EmitterDeps, current: HeldRoutes, account: string, id: string) {
  const since = deps.keptSinceMs?.();
  const windowMs = Math.max(
    MESSAGE_MEMORY_MS,
    current.hooks.deliveryRetentionSeconds * 1000,
    since === undefined ? 0 : Date.now() - since,
  );
  return { key: `${MESSAGE_KEY_PREFIX}${account}:${id}`, windowMs };
}

/**
 * Whether a message already ran (its key is in the ledger): the sync asks before it fetches the
 * message, so a sync that stopped on Gmail's rate limit part way does not spend its next quota
 * fetching again what ran, and stop at the same place for ever.
 */
export function createRanCheck(
  deps: EmitterDeps,
): (account: string, id: string) => Promise<boolean> {
  return async (account, id) => {
    const current = deps.routes();
    try {
      const held = await deps.ledger.hold([messageClaim(deps, current, account, id)]);
      held.release();
      return held.previous !== undefined;
    } finally {
      current.release();
    }
  };
}

/** The emitter of the mail flow. */
export function createEmitter(deps: EmitterDeps): Emit {
  return async function emit(account, item) {
    // Looked up per message: a reload may have replaced the gmail route since the flow started.
    const current = deps.routes();
    try {
      const route = current.routes.find('gmail');
      const { hooks } = current;
      const claim = messageClaim(deps, current, account, item.id);
      const held = await deps.ledger.hold([claim]);
      try {
        if (held.previous) return false;
        const accepted = await route.accept(envelopeOf(hooks.path, item));
        // A message the mapping drops (no match) is done too: it is remembered as such.
        const committed = await deps.ledger.commit(accepted, [claim]);
        return committed.previous === undefined && accepted.actions.length > 0;
      } finally {
        held.release();
      }
    } finally {
      current.release();
    }
  };
}

function envelopeOf(hooksPath: string, item: MailItem): Envelope {
  const message = {
    id: item.id,
    from: item.from,
    subject: item.subject,
    snippet: item.snippet,
    ...(item.body !== undefined && { body: item.body }),
  };
  const payload = { source: 'gmail', messages: [message] };
  return {
    id: randomUUID(),
    receivedAt: new Date().toISOString(),
    client: 'gmail-api',
    method: 'POST',
    path: `${hooksPath}/gmail`,
    hook: 'gmail',
    headers: {},
    query: Object.create(null) as Record<string, string>,
    raw: Buffer.from(JSON.stringify(payload)),
    payload,
    verification: { scheme: 'gmail-api', deliveryId: item.id },
  };
}
