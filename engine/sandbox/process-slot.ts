/**
 * The places of the supervisor's transform processes: each holds at most
 * one process at a time (a replacement starts only after the old process
 * has exited, with a back-off after failed starts) and the calls sent to
 * it, up to CALLS_PER_PROCESS. What happens to those calls is the
 * supervisor's; this is the state of a place and the choices over it.
 */
import type { TransformRestarted } from '../observe/events.ts';
import type { ProcessLink } from './process-link.ts';
import type { LoadError } from './protocol.ts';

/**
 * Calls one process holds at once (the rest wait in the server, their deadline not started):
 * enough to keep its isolate busy, few enough that a killed process sends back a bounded batch.
 */
export const CALLS_PER_PROCESS = 32;
const MAX_BACKOFF_MS = 5_000;

/** One place for a process; `C` is a call as the supervisor holds it. */
export type Slot<C> = {
  link?: ProcessLink;
  state: 'idle' | 'starting' | 'ready' | 'stopping';
  /** Calls sent to the current process and not answered, in the order they were sent. */
  inflight: Map<number, C>;
  /**
   * The call the process runs (or starts once a rebuild is done): the first one sent to it idle,
   * then each one its answers name (ResultMessage.next), else the first sent after that answer.
   */
  running?: number;
  /** Starts in a row that ended before the modules loaded (for the back-off). */
  failedStarts: number;
  /** The current process has loaded its modules. */
  loaded: boolean;
  /** The module the current process said it is loading, until its next message. */
  loading?: string;
  /** The modules the current process loads, in order, and how many it has started. */
  loadOrder?: readonly string[];
  loadNext?: number;
  /** The process is rebuilding its isolate: the calls it holds have not started. */
  rebuilding?: boolean;
  /** The process answered a call since it loaded or last rebuilt (an honest rebuild follows one). */
  answeredSinceRebuild?: boolean;
  /** Bounds a rebuild as a whole, whatever the process says meanwhile. */
  rebuildTimer?: NodeJS.Timeout;
  /** Bounds the load of the module in `loading`. */
  moduleTimer?: NodeJS.Timeout;
  /** The module whose load ran past its time (the process was killed for it). */
  blamed?: string;
  loadTimer?: NodeJS.Timeout;
  /** Boot only: who waits for the first load. */
  onLoaded?: (errors: LoadError[]) => void;
  onStartFailed?: (err: Error) => void;
  /** Who waits for the current process to be gone. */
  exitWaiters: Array<() => void>;
  /** Why the server killed the current process (a restart's reason). */
  stopReason?: TransformRestarted['reason'];
};

/** An empty place (no process yet). */
export function createSlot<C>(): Slot<C> {
  return { state: 'idle', inflight: new Map(), failedStarts: 0, loaded: false, exitWaiters: [] };
}

/** Kill the slot's process, if any; `reason` is what its restart reports. */
export function stopSlot<C>(slot: Slot<C>, reason?: TransformRestarted['reason']): void {
  if (slot.state === 'idle') return;
  slot.state = 'stopping';
  slot.stopReason = reason;
  clearTimeout(slot.loadTimer);
  slot.link?.kill();
}

/** Stop the slot's process; resolves once it has exited. */
export async function closeSlot<C>(slot: Slot<C>): Promise<void> {
  if (slot.state === 'idle') return;
  const gone = new Promise<void>((resolve) => slot.exitWaiters.push(resolve));
  stopSlot(slot);
  await gone;
}

/** How long a replacement waits after `failedStarts` starts in a row ended before loading. */
export function restartDelay(failedStarts: number): number {
  return Math.min(MAX_BACKOFF_MS, failedStarts === 0 ? 0 : 250 * 2 ** (failedStarts - 1));
}

/**
 * The ready slot with the fewest calls and room for one more, looking from `turn` (ties go to
 * the first), holding no call made after call `id` (keys of `inflight` are call ids; only a
 * call sent again after a kill gives one): such a call goes only behind older calls, never
 * behind another mapping's fresh poisoned call that would make it present at crash after crash
 * (kill-charges.ts). New calls are not held back so: the mappings' lanes take turns, so a
 * younger call of one may have gone before an older call of another.
 */
export function leastBusy<C>(
  slots: readonly Slot<C>[],
  turn: number,
  id = Number.POSITIVE_INFINITY,
): Slot<C> | undefined {
  let best: Slot<C> | undefined;
  for (let i = 0; i < slots.length; i++) {
    const slot = slots[(turn + i) % slots.length] as Slot<C>;
    if (slot.state !== 'ready' || slot.inflight.size >= CALLS_PER_PROCESS) continue;
    if (holdsAfter(slot, id)) continue;
    if (!best || slot.inflight.size < best.inflight.size) best = slot;
  }
  return best;
}

function holdsAfter<C>(slot: Slot<C>, id: number): boolean {
  for (const held of slot.inflight.keys()) if (held > id) return true;
  return false;
}
