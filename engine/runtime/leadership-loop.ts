/**
 * Keeping the lead: one instance at a time runs the heartbeat, takes
 * operator requests and prunes. The lead is taken or renewed every second,
 * one call at a time. A failed check does not give the lead up at once (the
 * lease is still held for its time): only an answer that another holds it,
 * or no confirmation for a whole lease, does. So a leader that meets one
 * slow or failed query neither drops its heartbeat nor, on the next check,
 * takes itself for a new leader and ends its own heartbeat's runner. A check
 * that hangs counts as unconfirmed too: the lead lapses a lease after the last
 * confirmation whether or not the check ever answers, and an answer that comes
 * a lease late confirms nothing. A new leader says it leads only once it has
 * recovered what the previous one left running.
 */
import type { Logger } from '../log.ts';
import type { Leadership } from './runtime-store.ts';

export type LeadershipLoop = {
  leading(): boolean;
  stop(): void;
};

export type LeadershipDeps = {
  leadership: Leadership;
  /** How long a lead lasts without renewal. */
  leaseMs: number;
  everyMs: number;
  /** Just became the leader: recover what a previous leader's heartbeat left (before leading). */
  gained: () => Promise<void>;
  /** Leading now, after `gained`: take over its work (replies to deliver, a lost request). */
  leads?: () => void;
  /** After each check (whatever its outcome). */
  checked?: () => Promise<void>;
  logger: Logger;
};

/** Take the lead if free, then keep checking; resolves after the first check. */
export async function startLeadership(deps: LeadershipDeps): Promise<LeadershipLoop> {
  let leading = false;
  let confirmedAt = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;

  async function check(): Promise<void> {
    const asked = Date.now();
    try {
      const held = await deps.leadership.lead();
      // Answered a whole lease after it was asked (the check hung): the lease it renewed may have
      // lapsed since, and another instance taken the lead and started work. Unconfirmed, then:
      // not a lead to act on (a takeover now would fail that instance's running heartbeat); the
      // next check, answered in time, says who leads.
      if (held && Date.now() - asked >= deps.leaseMs) {
        if (leading) deps.logger.warn('leadership check answered a lease late: not leading');
        leading = false;
      } else if (held) {
        confirmedAt = asked;
        if (!leading) {
          // Not leading until the takeover's recovery is done: it fails every heartbeat it finds
          // running as the previous leader's, so one this instance started meanwhile (a wake at
          // that moment) would be failed by its own takeover and its events shown again. A
          // recovery that fails is tried again by the next check, still not leading.
          await deps.gained();
          leading = true;
          deps.leads?.();
        }
      } else if (leading) {
        leading = false;
        deps.logger.warn('no longer leading: another instance runs the heartbeat');
      }
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message }, 'leadership check failed');
      // Unconfirmed for a whole lease: another instance may hold it now.
      if (leading && Date.now() - confirmedAt >= deps.leaseMs) leading = false;
    }
    await deps.checked?.().catch(() => undefined);
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => void check().finally(schedule), deps.everyMs);
    timer.unref();
  }

  await check();
  schedule();
  return {
    // Confirmed within a lease, whatever the check in flight: one that never answers (a
    // connection dropped without a reset) must not keep this instance leading beside the next.
    leading: () => leading && Date.now() - confirmedAt < deps.leaseMs,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
