/**
 * The mailbox sync job: from the stored cursor, every message Gmail added,
 * a bounded run of history pages at a time, each message fetched, turned
 * into the gmail preset's action and committed under its Gmail message id (a
 * message never runs twice); only when the history is read to its end is the
 * cursor moved forward and are the pushes marked covered. One sync per
 * mailbox at a time; a push during a sync makes it run again. A message Gmail
 * cannot give, or the mapping refuses, is logged and skipped: one bad message
 * never blocks the mailbox. An expired or missing cursor falls back to the
 * recent messages; a refused refresh token stops the mailbox until a new one
 * is there, and says so.
 */
import { failedOnInput, mayPassLater } from '../sandbox/call-outcome.ts';
import { HookError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { MailboxStore, PendingPush } from './mailbox-store.ts';
import { isLaterHistoryId } from './history-id.ts';
import { SAFETY_NET_MS } from './upkeep.ts';

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
  /** Will not get better by retrying (for a message: skip it). */
  | { kind: 'failed'; reason: string };

/** Where a run of history ended: the mailbox's history id (all read), or the page to go on from. */
export type HistoryNext = { historyId: string } | { pageToken: string };

/** The mailbox as the sync reads it (engine/gmail/mail-source.ts over the Gmail API). */
export type MailSource = {
  /** Ids of messages added after `cursor`, one bounded run of `pages` pages from `pageToken`. */
  changes(
    cursor: string,
    pageToken?: string,
  ): Promise<MailResult<{ messageIds: string[]; next: HistoryNext; pages: number }>>;
  /** The message, or undefined when it is gone or excluded (spam, trash, drafts, sent). */
  message(id: string): Promise<MailResult<MailItem | undefined>>;
  /** The newest message ids, newest first, and the mailbox's current history id. */
  recent(max: number): Promise<MailResult<{ messageIds: string[]; historyId: string }>>;
};

/** Turn one message into its action and commit it; false when it was committed before. */
export type Emit = (account: string, item: MailItem) => Promise<boolean>;

export type SyncDeps = {
  account: string;
  store: MailboxStore;
  source: MailSource;
  emit: Emit;
  /** Whether a message ran before (asked before it is fetched again). */
  ran?: (account: string, id: string) => Promise<boolean>;
  /** Tell the owner (a main-session event) that the mailbox needs attention. */
  notify: (text: string) => void;
  /** A hash of the refresh token in use: a new one lifts a refused one's stop. */
  tokenHash: () => string | undefined;
  logger: Logger;
  now?: () => number;
};

// After an expired or missing cursor: this many of the newest messages are looked at.
export const RECENT_FALLBACK = 50;
// Messages older than the last good sync by more than this are not run after an expired cursor.
const FALLBACK_MARGIN_MS = 60 * 60 * 1000;
/**
 * Most history pages one sync follows. Gmail keeps history for about a week; 1,000 full pages
 * are 500,000 added messages, far more than any mailbox gets in that time. A history that runs
 * past it (a provider that never stops answering with a next page) is treated as a lost cursor:
 * retrying from the same cursor would read the same pages and stop at the same place for ever.
 */
export const MAX_SYNC_PAGES = 1000;
// The most new messages one sync reads (each a Gmail call and an action): a page may name many
// (500 records, each up to MAX_MESSAGES_PER_RECORD), so the page budget alone did not bound them.
export const MAX_SYNC_MESSAGES = 50_000;

export type SyncOutcome =
  /** `ahead`: pushes left waiting, past the history id Gmail answered (read again soon). */
  | { kind: 'synced'; emitted: number; ahead?: number }
  | { kind: 'waiting'; reason: string; retryAfterMs?: number };

export type MailboxSync = {
  /** Sync now (or again right after the sync in progress). */
  request(): Promise<SyncOutcome>;
  /** Stop after the message in progress (shutdown); the next start goes on from the cursor. */
  stop(): void;
  /** Resolves when no sync is running. */
  idle(): Promise<void>;
};

type Failure = Exclude<MailResult<never>, { kind: 'ok' }>;
type Run = {
  deps: SyncDeps;
  now: () => number;
  stopping: () => boolean;
  /** What the current sync skipped last: it stays the last error of a sync that went through. */
  skipped?: string;
  /** Messages whose transform ran out of time, by id: the syncs in a row it did. */
  timeouts: Map<string, number>;
};

/** The sync job of one mailbox. */
export function createMailboxSync(deps: SyncDeps): MailboxSync {
  const run: Run = {
    deps,
    now: deps.now ?? Date.now,
    stopping: () => stopping,
    timeouts: new Map(),
  };
  let running: Promise<SyncOutcome> | undefined;
  let again = false;
  let stopping = false;

  async function loop(): Promise<SyncOutcome> {
    let outcome: SyncOutcome;
    do {
      again = false;
      outcome = await syncOnce(run).catch((err: unknown) => thrown(run, err));
    } while (again && !stopping && outcome.kind === 'synced');
    return outcome;
  }

  return {
    request() {
      if (stopping) return Promise.resolve({ kind: 'waiting', reason: 'stopping' });
      if (running) {
        again = true;
        return running;
      }
      running = loop().finally(() => {
        running = undefined;
      });
      return running;
    },
    stop() {
      stopping = true;
    },
    async idle() {
      while (running) await running.catch(() => undefined);
    },
  };
}

async function syncOnce(run: Run): Promise<SyncOutcome> {
  const { account, store } = run.deps;
  run.skipped = undefined;
  const state = store.state(account);
  if (state.needsConsent && !consentRenewed(run, state.refusedTokenHash)) {
    return { kind: 'waiting', reason: 'needs_consent' };
  }
  const pending = store.pendingPushes(account);
  // No cursor yet (the first watch sets one): start from the recent messages instead of a guess.
  if (state.cursor === undefined) return recover(run, state.lastSuccessAtMs);
  let emitted = 0;
  let pageToken: string | undefined;
  let pages = 0;
  let listed = 0;
  const tokens = new Set<string>();
  for (;;) {
    // Between runs too: a history of empty pages never reaches emitAll's check.
    if (run.stopping()) return { kind: 'waiting', reason: 'stopping' };
    const changes = await run.deps.source.changes(state.cursor, pageToken);
    if (changes.kind === 'cursor_expired') return recover(run, state.lastSuccessAtMs);
    if (changes.kind !== 'ok') return stopped(run, changes);
    listed += changes.value.messageIds.length;
    if (listed > MAX_SYNC_MESSAGES) {
      const reason = `the history named more than ${MAX_SYNC_MESSAGES} new messages`;
      return recover(run, state.lastSuccessAtMs, reason);
    }
    const done = await emitAll(run, changes.value.messageIds);
    if (typeof done !== 'number') return done.kind === 'waiting' ? done : stopped(run, done);
    emitted += done;
    pages += changes.value.pages;
    const next = changes.value.next;
    if ('pageToken' in next) {
      const endless = unending(pages, next.pageToken, tokens);
      if (endless !== undefined) return recover(run, state.lastSuccessAtMs, endless);
      tokens.add(next.pageToken);
      pageToken = next.pageToken;
      continue;
    }
    // The mailbox's current history id behind the cursor: the cursor came from a wrong answer
    // and would cover every push from now on (each one at or behind it). Started again from the
    // recent messages, the owner told.
    if (isLaterHistoryId(state.cursor, next.historyId)) {
      const reason = "Gmail's history is behind the stored cursor";
      return recover(run, state.lastSuccessAtMs, reason);
    }
    // Only now: every message up to this history id is committed.
    store.advanceCursor(account, next.historyId);
    const ahead = settlePushes(run, pending, next.historyId);
    synced(run);
    return { kind: 'synced', emitted, ...(ahead > 0 && { ahead }) };
  }
}

/**
 * How long a push past the history Gmail answers stays waiting: the safety net's hour, after
 * which it is marked covered as the others (a history id that never appears in the history must
 * not keep the mailbox syncing for ever; the safety net reads the mailbox each hour anyway).
 */
export const PUSH_AHEAD_MAX_MS = SAFETY_NET_MS;

/**
 * Which waiting pushes a sync that read the history up to `reached` covers: each at or behind
 * it, and one past it (Gmail's history can lag its push notification) only once it has waited
 * PUSH_AHEAD_MAX_MS; the rest stay waiting, for the next sync. Pure.
 */
export function coveredPushes<P extends Pick<PendingPush, 'historyId' | 'receivedAtMs'>>(
  pending: readonly P[],
  reached: string,
  nowMs: number,
): { covered: P[]; ahead: P[] } {
  const covered: P[] = [];
  const ahead: P[] = [];
  for (const push of pending) {
    const waiting =
      isLaterHistoryId(push.historyId, reached) && nowMs - push.receivedAtMs < PUSH_AHEAD_MAX_MS;
    (waiting ? ahead : covered).push(push);
  }
  return { covered, ahead };
}

/** Mark the pushes the history up to `reached` covers; how many stay waiting ahead of it. */
function settlePushes(run: Run, pending: readonly PendingPush[], reached: string): number {
  const { covered, ahead } = coveredPushes(pending, reached, run.now());
  run.deps.store.markSynced(
    covered.map((p) => p.messageId),
    run.now(),
  );
  if (ahead.length > 0) {
    run.deps.logger.info(
      { account: run.deps.account, historyId: reached, ahead: ahead.length },
      'gmail: a push is past the history Gmail answered; it is read again soon',
    );
  }
  return ahead.length;
}

/** A sync that read the mailbox to its cursor; a message it skipped stays the last error. */
function synced(run: Run): void {
  const { account, store } = run.deps;
  store.recordSync(account, run.now(), undefined);
  if (run.skipped !== undefined) store.recordError(account, run.skipped);
}

/** Why the history is not followed further (Gmail loops, or it runs past the page budget). */
function unending(pages: number, pageToken: string, seen: ReadonlySet<string>): string | undefined {
  if (seen.has(pageToken)) return 'Gmail gave a page of the history it had given before';
  if (pages >= MAX_SYNC_PAGES) return `the history ran past ${MAX_SYNC_PAGES} pages`;
  return undefined;
}

/** A new refresh token since the refused one: lift the stop and go on. */
function consentRenewed(run: Run, refused: string | undefined): boolean {
  const current = run.deps.tokenHash();
  if (current === undefined || current === refused) return false;
  run.deps.store.setNeedsConsent(run.deps.account, false);
  run.deps.logger.info({ account: run.deps.account }, 'gmail: a new authorisation is there');
  return true;
}

type Stopping = { kind: 'waiting'; reason: 'stopping' };

/** Emit each message, oldest first as given; skip what can never be emitted; stop on what waits. */
async function emitAll(run: Run, ids: readonly string[]): Promise<number | Failure | Stopping> {
  let emitted = 0;
  for (const id of ids) {
    if (run.stopping()) return { kind: 'waiting', reason: 'stopping' };
    // A sync that stopped part way (Gmail's rate limit) reads the same ids again: those that
    // ran are not fetched again, so each try gets further.
    if (await run.deps.ran?.(run.deps.account, id)) continue;
    const message = await run.deps.source.message(id);
    if (message.kind === 'failed') {
      skip(run, id, message.reason);
      continue;
    }
    if (message.kind !== 'ok') return message;
    if (!message.value) continue;
    if (await emitOne(run, id, message.value)) emitted++;
  }
  return emitted;
}

/** Emit one message; false when it ran before or the mapping or policy refused it (skipped). */
async function emitOne(run: Run, id: string, item: MailItem): Promise<boolean> {
  try {
    const emitted = await run.deps.emit(run.deps.account, item);
    run.timeouts.delete(id);
    return emitted;
  } catch (err) {
    // A refusal of the mapping, its transform or the policy is about this message; anything
    // else (the store, a transform process that was not ready) is the mailbox's: the sync waits.
    if (err instanceof HookError && err.status < 500) {
      skip(run, id, err.code);
      return false;
    }
    // The transform failed on this mail's text (a throw, an invalid action: anyone can send a
    // mail that makes a transform throw; thrown on, it stopped every sync at this message).
    if (failedOnInput(err)) {
      skip(run, id, (err as HookError).code);
      return false;
    }
    // Out of time (the mail's text, a loop, or a loaded host) or out of memory (the mail's text,
    // or another mapping's state in the isolate they share). Tried again at the next syncs, and
    // skipped at the third time in a row, so one mail cannot hold the mailbox.
    if (mayPassLater(err)) {
      const times = (run.timeouts.get(id) ?? 0) + 1;
      run.timeouts.delete(id);
      if (times >= TIMEOUTS_BEFORE_SKIP) {
        skip(run, id, err.code);
        return false;
      }
      if (run.timeouts.size >= MAX_TIMED_OUT) run.timeouts.clear();
      run.timeouts.set(id, times);
    }
    throw err;
  }
}

// Syncs in a row a message may run out of its transform's time before it is skipped.
const TIMEOUTS_BEFORE_SKIP = 3;
// Messages whose timeouts are counted at once (a bound, not a promise).
const MAX_TIMED_OUT = 1000;

/**
 * A sync that threw (the store failed, the transform queue was full): the mailbox waits and is
 * tried again as after any failure, its reason shown as the last error. Unhandled, the sync
 * only logged it, and nothing tried again until a push or the safety-net check came.
 */
function thrown(run: Run, err: unknown): SyncOutcome {
  const reason = err instanceof HookError ? err.code : 'internal';
  run.deps.logger.error({ account: run.deps.account, reason }, 'gmail sync failed');
  // An attempt like any other: `gmail status` shows when, and why it did not go through.
  run.deps.store.recordSync(run.deps.account, run.now(), `sync failed: ${reason}`);
  return { kind: 'waiting', reason: 'failed' };
}

function skip(run: Run, messageId: string, reason: string): void {
  run.deps.logger.warn({ account: run.deps.account, messageId, reason }, 'gmail message skipped');
  run.skipped = `message ${messageId} skipped: ${reason}`;
  run.deps.store.recordError(run.deps.account, run.skipped);
}

/**
 * Where the fallback starts reading: a margin before the last good sync (mail the sync may not
 * have reached, Gmail's clock). Mail since then may have run (a sync that stopped part way runs
 * mail without being a good sync), so the ledger keeps those messages' keys however long ago
 * that was (ledgerFloorMs): each is looked up, none runs twice. Pure.
 */
export function fallbackSince(lastSuccessAtMs: number | undefined, nowMs: number): number {
  return (lastSuccessAtMs ?? nowMs) - FALLBACK_MARGIN_MS;
}

/**
 * Since when the ledger must keep the keys of messages that ran, beyond its week: from where
 * the fallback would read again (undefined: no good sync yet, the week covers it). Pure.
 */
export function ledgerFloorMs(lastSuccessAtMs: number | undefined): number | undefined {
  return lastSuccessAtMs === undefined ? undefined : fallbackSince(lastSuccessAtMs, 0);
}

/**
 * No usable cursor: the recent messages since the last good sync, then a fresh cursor. `why`
 * the history could not be read to its end, when that is the reason (the owner is always told).
 */
async function recover(
  run: Run,
  lastSuccessAtMs: number | undefined,
  why?: string,
): Promise<SyncOutcome> {
  const { deps } = run;
  deps.logger.warn(
    { account: deps.account, ...(why && { reason: why }) },
    'gmail: no usable cursor, syncing recent messages',
  );
  const recent = await deps.source.recent(RECENT_FALLBACK);
  if (recent.kind !== 'ok') return stopped(run, recent);
  const since = fallbackSince(lastSuccessAtMs, run.now());
  // Oldest first, as new mail would have come; the list is newest first.
  const ids = [...recent.value.messageIds].reverse();
  const pending = deps.store.pendingPushes(deps.account);
  let emitted = 0;
  let oldestSeen = Number.POSITIVE_INFINITY;
  for (const id of ids) {
    if (run.stopping()) return { kind: 'waiting', reason: 'stopping' };
    const message = await deps.source.message(id);
    if (message.kind === 'failed') {
      skip(run, id, message.reason);
      continue;
    }
    if (message.kind !== 'ok') return stopped(run, message);
    const item = message.value;
    if (!item) continue;
    oldestSeen = Math.min(oldestSeen, item.receivedAtMs);
    if (item.receivedAtMs < since) continue;
    // Skipped as in the history sync: a refused message must not end the fallback for ever.
    if (await emitOne(run, id, item)) emitted++;
  }
  if (why !== undefined) {
    deps.notify(
      `Gmail sync for ${deps.account} could not read the mailbox history to its end (${why}); it went on from the ${RECENT_FALLBACK} newest messages, and mail between the two may have been missed.`,
    );
  } else if (ids.length >= RECENT_FALLBACK && oldestSeen >= since) {
    deps.notify(
      `Gmail sync for ${deps.account} lost its place in the mailbox history; the ${RECENT_FALLBACK} newest messages were read, and more mail may have arrived since the last sync.`,
    );
  }
  deps.store.resetCursor(deps.account, recent.value.historyId);
  const ahead = settlePushes(run, pending, recent.value.historyId);
  synced(run);
  return { kind: 'synced', emitted, ...(ahead > 0 && { ahead }) };
}

function stopped(run: Run, result: Failure): SyncOutcome {
  const { deps } = run;
  const reason = result.kind === 'failed' ? result.reason : result.kind;
  // What Gmail answered, for `gmail status` (an outage and a rate limit read differently).
  const detail = result.kind === 'backoff' && result.reason ? result.reason : reason;
  deps.store.recordSync(deps.account, run.now(), detail);
  if (result.kind === 'needs_consent') {
    markNeedsConsent(deps);
    return { kind: 'waiting', reason: result.kind };
  }
  deps.logger.warn({ account: deps.account, reason: detail }, 'gmail sync did not finish');
  return {
    kind: 'waiting',
    reason: result.kind,
    ...(result.kind === 'backoff' && { retryAfterMs: result.retryAfterMs }),
  };
}

/** The refresh token was refused: stop the mailbox, say so once, until a new token is there. */
export function markNeedsConsent(
  deps: Pick<SyncDeps, 'account' | 'store' | 'logger' | 'notify' | 'tokenHash'>,
): void {
  if (deps.store.state(deps.account).needsConsent) return;
  deps.store.setNeedsConsent(deps.account, true, deps.tokenHash());
  deps.logger.error({ account: deps.account }, 'gmail: the refresh token was refused');
  deps.notify(
    `Gmail sync for ${deps.account} stopped: Google refused the stored authorisation. Run \`hookgate gmail setup --account ${deps.account}\` to consent again.`,
  );
}
