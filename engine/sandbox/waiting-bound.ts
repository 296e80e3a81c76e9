/**
 * The bound on what the server holds for transform calls not yet answered
 * (hooks.transforms.maxWaitingCalls, maxWaitingBytes): how many calls may
 * wait for a process, and how many bytes the frames of every unanswered
 * call, waiting or sent, may hold in total. Past either a call is refused
 * at once (503 unavailable), or takes the place of the newest waiting calls
 * of a mapping that holds more (fair-share.ts).
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

/** The bounds and what is held now: waiting calls (all lanes) and bytes of every unanswered call. */
export type Room = { waiting: number; maxCalls: number; heldBytes: number; maxBytes: number };

export type WaitingBound = {
  /** The bounds, and what is held with `waiting` calls waiting (fair-share.ts decides from it). */
  room(waiting: number): Room;
  /** Hold `bytes` until the returned release runs (once, however often called). */
  hold(bytes: number): () => void;
};

/** The bound of one supervisor (the defaults when a setting is absent). */
export function createWaitingBound(settings: {
  maxWaitingCalls?: number;
  maxWaitingBytes?: number;
}): WaitingBound {
  const maxCalls = settings.maxWaitingCalls ?? DEFAULT_MAX_WAITING;
  const maxBytes = settings.maxWaitingBytes ?? DEFAULT_MAX_WAITING_BYTES;
  // Bytes of every call made and not yet settled (waiting or sent): its frame and what its caller
  // holds meanwhile (the request's raw body).
  let heldBytes = 0;
  return {
    room: (waiting) => ({ waiting, maxCalls, heldBytes, maxBytes }),
    hold(bytes) {
      heldBytes += bytes;
      let held = true;
      return () => {
        if (held) heldBytes -= bytes;
        held = false;
      };
    },
  };
}

/** Whether one more call of `bytes` may wait as things are. */
export function fits(room: Room, bytes: number): boolean {
  return room.waiting < room.maxCalls && mayHold(room.heldBytes, bytes, room.maxBytes);
}

/** Whether one more call of `bytes` fits; a lone call always does (a body the server accepted). */
export function mayHold(held: number, bytes: number, max: number): boolean {
  return held === 0 || held + bytes <= max;
}
