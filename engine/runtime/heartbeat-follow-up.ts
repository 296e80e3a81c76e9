/**
 * When the heartbeat asks for itself again, on one timer: a turn that did
 * not happen (the runner unreachable, 429, 5xx) is asked again with the
 * retry policy's backoff, up to its attempts, as an agent run is; the
 * narrowing of a refused batch (event-isolation.ts) takes its next step
 * after a backoff over the refusals in a row, so a refused event is found in
 * a few turns, not at the pace of the schedule. A heartbeat that starts
 * takes whatever was due (one waiting beside it would be an extra turn), and
 * leaves it due again if its own turn did not happen.
 */
import { type LongTimer, longTimeout } from '../long-timer.ts';
import { retryDelayMs } from './replies.ts';

export type FollowUpReason = 'retry' | 'isolate';

export type FollowUp = {
  /** A heartbeat starts: what was due is now its own. */
  take(): FollowUpReason | undefined;
  /**
   * Its turn did not happen. Asked for now (or a retry itself): asked again, true once the
   * policy's attempts are used up (the caller then takes the turn as refused). A narrowing step
   * it took stays due.
   */
  notRun(due: FollowUpReason | undefined, askedNow: boolean, retryAfterMs?: number): boolean;
  /** Its turn was refused: the narrowing's next step is asked for when `next`. */
  refused(step: { next: boolean; found?: boolean }): void;
  /** Its turn was answered: no retry is due, and the refusals in a row start over. */
  answered(): void;
  stop(): void;
};

export function createFollowUp(deps: {
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  request: (reason: FollowUpReason) => void;
}): FollowUp {
  let timer: LongTimer | undefined;
  let due: FollowUpReason | undefined;
  let stopped = false;
  // Attempts at a turn that did not happen; refused turns in a row (the narrowing's backoff).
  let retries = 0;
  let refusals = 0;

  function askLater(reason: FollowUpReason, delayMs: number): void {
    if (stopped) return;
    timer?.clear();
    due = reason;
    timer = longTimeout(() => {
      timer = undefined;
      due = undefined;
      deps.request(reason);
    }, delayMs);
  }

  function clear(): void {
    timer?.clear();
    timer = undefined;
    due = undefined;
  }

  return {
    take() {
      const was = due;
      clear();
      return was;
    },
    notRun(taken, askedNow, retryAfterMs) {
      if (!askedNow && taken !== 'retry') {
        // A scheduled check: not asked again, but a narrowing step it took is still due.
        if (taken === 'isolate') askLater('isolate', retryDelayMs(refusals, deps.retry, undefined));
        return false;
      }
      retries += 1;
      if (retries >= deps.retry.maxAttempts) {
        retries = 0;
        return true;
      }
      askLater('retry', retryDelayMs(retries, deps.retry, retryAfterMs));
      return false;
    },
    refused(step) {
      retries = 0;
      // An event found ends its narrowing: the next one's backoff starts over (over three
      // refused events in a row it grew to the policy's cap, most of an hour at the defaults).
      refusals = step.found ? 1 : refusals + 1;
      if (step.next) askLater('isolate', retryDelayMs(refusals, deps.retry, undefined));
    },
    answered() {
      retries = 0;
      refusals = 0;
    },
    stop() {
      stopped = true;
      clear();
    },
  };
}
