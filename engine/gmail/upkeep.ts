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
  const last = Math.max(state.lastPushAtMs ?? 0, state.lastSyncAtMs ?? 0);
  return nowMs - last >= SAFETY_NET_MS;
}

export type UpkeepDeps = {
  account: string;
  renewEveryMinutes: number;
  store: MailboxStore;
  watch: () => Promise<MailResult<{ historyId: string; expirationMs: number }>>;
  sync: () => Promise<unknown>;
  logger: Logger;
  now?: () => number;
};

export type Upkeep = { tick(): Promise<void>; stop(): void };

/** Start the minute tick (the caller runs the first one at once). */
export function startUpkeep(deps: UpkeepDeps): Upkeep {
  const now = deps.now ?? Date.now;
  let busy = false;
  async function tick(): Promise<void> {
    // One tick at a time: a slow Gmail call must not stack ticks up.
    if (busy) return;
    busy = true;
    try {
      const state = deps.store.state(deps.account);
      if (state.needsConsent) return;
      if (watchDue(state, deps.renewEveryMinutes, now())) await renew(deps, now);
      if (safetySyncDue(deps.store.state(deps.account), now())) await deps.sync();
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'gmail upkeep failed');
    } finally {
      busy = false;
    }
  }
  const task: ScheduledTask = cron.schedule('* * * * *', () => void tick(), {
    name: `hookgate-gmail-${deps.account}`,
    noOverlap: true,
  });
  return {
    tick,
    stop() {
      void task.destroy();
    },
  };
}

async function renew(deps: UpkeepDeps, now: () => number): Promise<void> {
  const result = await deps.watch();
  if (result.kind !== 'ok') {
    const reason = result.kind === 'failed' ? result.reason : result.kind;
    if (result.kind === 'needs_consent') deps.store.setNeedsConsent(deps.account, true);
    deps.store.recordSync(deps.account, now(), `watch: ${reason}`);
    deps.logger.warn({ account: deps.account, reason }, 'gmail watch failed');
    return;
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
}
