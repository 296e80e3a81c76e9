/**
 * The bound on what the server holds for transform calls not yet answered
 * (hooks.transforms.maxWaitingCalls, maxWaitingBytes): how many calls may
 * wait for a process, and how many bytes the frames of every unanswered
 * call, waiting or sent, may hold in total. Past either a call is refused
 * at once (503 unavailable).
 */
import { HookError } from '../errors.ts';

const DEFAULT_MAX_WAITING = 256;
/**
 * Default of maxWaitingBytes (32 MiB): some sixty calls of the largest body (its input and the
 * request's raw body), thousands of ordinary events. Counted over the frames (JSON-escaped
 * input), so a body of characters that escape six-fold is charged what it really holds.
 */
export const DEFAULT_MAX_WAITING_BYTES = 32 * 1024 * 1024;

/** The refusal of a call past the bound. */
export const BUSY = new HookError(
  'unavailable',
  'The transforms are busy (hooks.transforms.maxWaitingCalls, maxWaitingBytes); retry later.',
  {
    headers: { 'retry-after': '1' },
  },
);

export type WaitingBound = {
  /** Whether one more call may wait beside the `waiting` ones. */
  mayWait(waiting: number): boolean;
  /** Hold `bytes` until the returned release runs (once, however often called); undefined when they do not fit. */
  hold(bytes: number): (() => void) | undefined;
};

/** The bound of one supervisor (the defaults when a setting is absent). */
export function createWaitingBound(settings: {
  maxWaitingCalls?: number;
  maxWaitingBytes?: number;
}): WaitingBound {
  const maxWaitingCalls = settings.maxWaitingCalls ?? DEFAULT_MAX_WAITING;
  const maxWaitingBytes = settings.maxWaitingBytes ?? DEFAULT_MAX_WAITING_BYTES;
  // Bytes of every call made and not yet settled (waiting or sent): its frame and what its caller
  // holds meanwhile (the request's raw body).
  let heldBytes = 0;
  return {
    mayWait: (waiting) => waiting < maxWaitingCalls,
    hold(bytes) {
      if (!mayHold(heldBytes, bytes, maxWaitingBytes)) return undefined;
      heldBytes += bytes;
      let held = true;
      return () => {
        if (held) heldBytes -= bytes;
        held = false;
      };
    },
  };
}

/** Whether one more call of `bytes` fits; a lone call always does (a body the server accepted). */
export function mayHold(held: number, bytes: number, max: number): boolean {
  return held === 0 || held + bytes <= max;
}
