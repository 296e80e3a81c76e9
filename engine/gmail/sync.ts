/**
 * The mailbox sync job: from the stored cursor, every message Gmail added
 * (all pages), each fetched and turned into the gmail preset's action, each
 * committed under its Gmail message id (a message never runs twice), and
 * only then the cursor moved forward and the pushes marked covered. One sync
 * per mailbox at a time; a push during a sync makes it run again. An expired
 * cursor falls back to the recent messages; a refused refresh token stops the
 * mailbox until the operator consents again, and says so.
 */
import type { Logger } from '../log.ts';
import type { MailboxStore } from './mailbox-store.ts';

/** A message as the gmail preset takes it. */
export type MailItem = {
  id: string;
  from: string;
  subject: string;
  snippet: string;
  body?: string;
  /** Epoch ms Gmail accepted it (internalDate). */
  receivedAtMs: number;
};

/** What a call to Gmail gave: a value, or why not. */
export type MailResult<T> =
  | { kind: 'ok'; value: T }
  | { kind: 'cursor_expired' }
  | { kind: 'backoff'; retryAfterMs: number; reason?: string }
  | { kind: 'needs_consent' }
  | { kind: 'failed'; reason: string };

/** The mailbox as the sync reads it (engine/gmail/api.ts and message-text.ts behind it). */
export type MailSource = {
  /** Ids of messages added after `cursor` (every page), and the history id to continue from. */
  changes(cursor: string): Promise<MailResult<{ messageIds: string[]; historyId: string }>>;
  /** The message, or undefined when it is gone or excluded (spam, trash, drafts, sent). */
  message(id: string): Promise<MailResult<MailItem | undefined>>;
  /** The newest message ids and the mailbox's current history id (after an expired cursor). */
  recent(max: number): Promise<MailResult<{ messageIds: string[]; historyId: string }>>;
};

/** Turn one message into its action and commit it; false when it was committed before. */
export type Emit = (account: string, item: MailItem) => Promise<boolean>;

export type SyncDeps = {
  account: string;
  store: MailboxStore;
  source: MailSource;
  emit: Emit;
  /** Tell the owner (a main-session event) that the mailbox needs attention. */
  notify: (text: string) => void;
  logger: Logger;
  now?: () => number;
};

// After an expired cursor: this many of the newest messages are looked at, no more.
export const RECENT_FALLBACK = 50;
// Messages older than the last sync by more than this are not re-run after an expired cursor.
const FALLBACK_MARGIN_MS = 60 * 60 * 1000;

export type SyncOutcome =
  | { kind: 'synced'; emitted: number }
  | { kind: 'waiting'; reason: string; retryAfterMs?: number };

export type MailboxSync = {
  /** Sync now (or again right after the sync in progress). */
  request(): Promise<SyncOutcome>;
  /** Resolves when no sync is running (for shutdown). */
  idle(): Promise<void>;
};

/** The sync job of one mailbox. */
export function createMailboxSync(deps: SyncDeps): MailboxSync {
  const now = deps.now ?? Date.now;
  let running: Promise<SyncOutcome> | undefined;
  let again = false;

  async function loop(): Promise<SyncOutcome> {
    let outcome: SyncOutcome;
    do {
      again = false;
      outcome = await syncOnce(deps, now);
    } while (again && outcome.kind === 'synced');
    return outcome;
  }

  return {
    request() {
      if (running) {
        again = true;
        return running;
      }
      running = loop().finally(() => {
        running = undefined;
      });
      return running;
    },
    async idle() {
      while (running) await running.catch(() => undefined);
    },
  };
}

async function syncOnce(deps: SyncDeps, now: () => number): Promise<SyncOutcome> {
  const { account, store } = deps;
  const state = store.state(account);
  if (state.needsConsent) return { kind: 'waiting', reason: 'needs_consent' };
  const pending = store.pendingPushes(account);
  // No cursor yet (the watch sets one): just before the first push's, so its change is included.
  const first = pending[0]?.historyId;
  const cursor = state.cursor ?? (first === undefined ? undefined : String(BigInt(first) - 1n));
  if (cursor === undefined) return { kind: 'waiting', reason: 'no_cursor' };
  const changes = await deps.source.changes(cursor);
  if (changes.kind === 'cursor_expired') return recover(deps, now, state.lastSyncAtMs);
  if (changes.kind !== 'ok') return stopped(deps, now, changes);
  const emitted = await emitAll(deps, changes.value.messageIds);
  if (typeof emitted !== 'number') return stopped(deps, now, emitted);
  // Only now: every message up to this history id is committed.
  store.advanceCursor(account, changes.value.historyId);
  store.markSynced(
    pending.map((p) => p.messageId),
    now(),
  );
  store.recordSync(account, now(), undefined);
  return { kind: 'synced', emitted };
}

async function emitAll(
  deps: SyncDeps,
  ids: readonly string[],
): Promise<number | Exclude<MailResult<never>, { kind: 'ok' }>> {
  let emitted = 0;
  for (const id of ids) {
    const message = await deps.source.message(id);
    if (message.kind !== 'ok') return message;
    if (message.value && (await deps.emit(deps.account, message.value))) emitted++;
  }
  return emitted;
}

/** An expired cursor: the recent messages since the last sync, then a fresh cursor. */
async function recover(
  deps: SyncDeps,
  now: () => number,
  lastSyncAtMs: number | undefined,
): Promise<SyncOutcome> {
  deps.logger.warn({ account: deps.account }, 'gmail cursor expired: syncing recent messages');
  const recent = await deps.source.recent(RECENT_FALLBACK);
  if (recent.kind !== 'ok') return stopped(deps, now, recent);
  const since = (lastSyncAtMs ?? now()) - FALLBACK_MARGIN_MS;
  let emitted = 0;
  for (const id of recent.value.messageIds) {
    const message = await deps.source.message(id);
    if (message.kind !== 'ok') return stopped(deps, now, message);
    const item = message.value;
    if (item && item.receivedAtMs >= since && (await deps.emit(deps.account, item))) emitted++;
  }
  const pending = deps.store.pendingPushes(deps.account);
  deps.store.resetCursor(deps.account, recent.value.historyId);
  deps.store.markSynced(
    pending.map((p) => p.messageId),
    now(),
  );
  deps.store.recordSync(deps.account, now(), undefined);
  return { kind: 'synced', emitted };
}

function stopped(
  deps: SyncDeps,
  now: () => number,
  result: Exclude<MailResult<never>, { kind: 'ok' }>,
): SyncOutcome {
  const reason = result.kind === 'failed' ? result.reason : result.kind;
  // What Gmail answered, for `gmail status` (an outage and a rate limit read differently).
  const detail = result.kind === 'backoff' && result.reason ? result.reason : reason;
  deps.store.recordSync(deps.account, now(), detail);
  if (result.kind === 'needs_consent') {
    deps.store.setNeedsConsent(deps.account, true);
    deps.logger.error({ account: deps.account }, 'gmail: the refresh token was refused');
    deps.notify(
      `Gmail sync for ${deps.account} stopped: Google refused the stored authorisation. Run \`hookgate gmail setup --account ${deps.account}\` to consent again.`,
    );
    return { kind: 'waiting', reason };
  }
  deps.logger.warn({ account: deps.account, reason }, 'gmail sync did not finish');
  return {
    kind: 'waiting',
    reason,
    ...(result.kind === 'backoff' && { retryAfterMs: result.retryAfterMs }),
  };
}
