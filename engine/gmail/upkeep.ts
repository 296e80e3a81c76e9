/**
 * Keeping a mailbox watched and synced: a node-cron tick every minute asks
 * two pure questions of the stored state. Is the watch due (never made,
 * older than `renewEveryMinutes`, or expiring within a day)? Then call
 * users.watch, record its expiry, and start the cursor from its history id if
 * there is none. Has no push arrived for a while? Then sync anyway (Gmail
 * does not promise every push).
 */
import cron, { type ScheduledTask } from 'node-cron';
import type { Logger } from '../log.ts';
import type { MailboxState, MailboxStore } from './mailbox-store.ts';
import type { MailResult } from './sync.ts';

const DAY_MS = 24 * 60 * 60 * 1000;
/** Without a push for this long, the mailbox is synced anyway. */
export const SAFETY_NET_MS = 60 * 60 * 1000;

/** True when the watch must be (re)made now. */
export function watchDue(state: MailboxState, renewEveryMinutes: number, nowMs: number): boolean {
  if (state.watchedAtMs === undefined || state.watchExpirationMs === undefined) return true;
  if (nowMs - state.watchedAtMs >= renewEveryMinutes * 60_000) return true;
  return state.watchExpirationMs - nowMs < DAY_MS;
}

/** True when the mailbox should be synced though no push asked for it. */
export function safetySyncDue(state: MailboxState, nowMs: number): boolean {
  if (state.needsConsent || state.cursor === undefined) return false;
  const last = Math.max(state.lastPushAtMs ?? 0, state.lastSuccessAtMs ?? 0);
  return nowMs - last >= SAFETY_NET_MS;
}

export type UpkeepDeps = {
  account: string;
  renewEveryMinutes: number;
  store: MailboxStore;
  watch: () => Promise<MailResult<{ historyId: string; expirationMs: number }>>;
  sync: () => Promise<unknown>;
  /** The refresh token was refused while watching. */
  onNeedsConsent: () => void;
  logger: Logger;
  now?: () => number;
};

export type Upkeep = { tick(): Promise<void>; stop(): Promise<void> };

// A failed watch is tried again after this, doubling up to an hour (never every minute).
const WATCH_RETRY_MS = 60_000;
const WATCH_RETRY_MAX_MS = 60 * 60 * 1000;
// Pushes a sync covered are kept this long (Pub/Sub keeps a message at most 7 days).
const PUSH_KEEP_MS = 8 * 24 * 60 * 60 * 1000;

/** Start the minute tick (the caller runs the first one at once). */
export function startUpkeep(deps: UpkeepDeps): Upkeep {
  const now = deps.now ?? Date.now;
  const watchRetry = { notBefore: 0, waitMs: WATCH_RETRY_MS };
  let current: Promise<void> | undefined;
  async function work(): Promise<void> {
    const state = deps.store.state(deps.account);
    // Waiting for consent: a sync attempt is what notices a new refresh token.
    if (state.needsConsent) return void (await deps.sync());
    if (watchDue(state, deps.renewEveryMinutes, now()) && now() >= watchRetry.notBefore) {
      const ok = await renew(deps, now);
      watchRetry.notBefore = ok ? 0 : now() + watchRetry.waitMs;
      watchRetry.waitMs = ok ? WATCH_RETRY_MS : Math.min(watchRetry.waitMs * 2, WATCH_RETRY_MAX_MS);
    }
    if (safetySyncDue(deps.store.state(deps.account), now())) await deps.sync();
    deps.store.pruneSynced(now() - PUSH_KEEP_MS);
  }
  function tick(): Promise<void> {
    // One tick at a time: a slow Gmail call must not stack ticks up.
    if (current) return current;
    current = work()
      .catch((err: unknown) =>
        deps.logger.warn({ err: (err as Error).message }, 'gmail upkeep failed'),
      )
      .finally(() => {
        current = undefined;
      });
    return current;
  }
  const task: ScheduledTask = cron.schedule('* * * * *', () => void tick(), {
    name: `hookgate-gmail-${deps.account}`,
    noOverlap: true,
  });
  return {
    tick,
    async stop() {
      await task.destroy();
      await current;
    },
  };
}

/** Make or renew the watch; false when it failed (recorded, and said in the log). */
async function renew(deps: UpkeepDeps, now: () => number): Promise<boolean> {
  const result = await deps.watch();
  if (result.kind !== 'ok') {
    if (result.kind === 'needs_consent') {
      deps.onNeedsConsent();
      return false;
    }
    const reason = result.kind === 'failed' ? result.reason : result.kind;
    // Not a sync: the last good sync stays what the safety net and the fallback go by.
    deps.store.recordWatchFailure(deps.account, reason);
    deps.logger.warn({ account: deps.account, reason }, 'gmail watch failed');
    return false;
  }
  deps.store.recordWatch(deps.account, result.value.expirationMs, now());
  // The first watch gives the start point: mail after it is new mail.
  if (deps.store.state(deps.account).cursor === undefined) {
    deps.store.resetCursor(deps.account, result.value.historyId);
  }
  deps.logger.info(
    { account: deps.account, expiresAt: new Date(result.value.expirationMs).toISOString() },
    'gmail watch renewed',
  );
  return true;
}
