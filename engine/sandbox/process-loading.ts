/**
 * What a transform process says while it loads its modules, at start and when it rebuilds its
 * isolate (recycling): which module it is loading, in the order the server sent them, each
 * timed on its own; and while it rebuilds, the calls waiting have not started, so their
 * deadlines wait (process-calls.ts). A module the process died loading, or that ran past its
 * own load time, is the suspect (load-suspects.ts): a kill for any other reason (a call's
 * deadline, the whole start's timeout) names no module. Anything out of turn is a lie, and a
 * rebuild is bounded as a whole: an honest process rebuilds only after answering a call, and
 * loads its modules one after the other, so a process that talks on (a log line every few
 * seconds) or says 'rebuilt' and 'rebuilding' again without answering would otherwise hold
 * its calls, their deadlines never running, for ever.
 */
import type { Logger } from '../log.ts';
import { type Slot, stopSlot } from './process-slot.ts';

/** Beside a module's own top-level limit (4 x cpuTimeoutMs): compiling up to 2 MiB of source. */
const COMPILE_ALLOWANCE_MS = 5_000;

/** A load message from a process. */
export type LoadMessage = { type: 'loading'; key: string } | { type: 'rebuilding' | 'rebuilt' };

export type LoadWatch = {
  /** A process was spawned to load `keys`, in this order. */
  spawned(slot: Slot<unknown>, keys: readonly string[]): void;
  /** Any message from the process: a 'loading' ends with the next one. */
  heard(slot: Slot<unknown>): void;
  /** The process answered a call: it may rebuild once after it. */
  answered(slot: Slot<unknown>): void;
  /** A load message; false when it came out of turn (the process is lying). */
  loadMessage(slot: Slot<unknown>, message: LoadMessage): boolean;
  /**
   * The process is gone (`crashed`: on its own): the module it was loading, if that is the
   * suspect, and whether it died loading (then no call of it had started).
   */
  exited(slot: Slot<unknown>, crashed: boolean): { suspect?: string; loading: boolean };
};

export function createLoadWatch(deps: {
  cpuTimeoutMs: number;
  logger: Logger;
  mappingOf: ReadonlyMap<string, string>;
  /** The calls waiting in a rebuilding process have not started: no deadline runs. */
  pause(slot: Slot<unknown>): void;
  resume(slot: Slot<unknown>): void;
}): LoadWatch {
  const { cpuTimeoutMs, logger, mappingOf, pause, resume } = deps;
  const perModuleMs = 4 * cpuTimeoutMs + COMPILE_ALLOWANCE_MS;

  /** A whole rebuild: each module's load, and one more step for what comes around them. */
  function rebuildBound(slot: Slot<unknown>): void {
    const steps = (slot.loadOrder?.length ?? 0) + 1;
    slot.rebuildTimer = setTimeout(() => {
      logger.warn(
        { ms: steps * perModuleMs },
        'transform process did not finish its rebuild in time; restarting it',
      );
      stopSlot(slot, 'load_timeout');
    }, steps * perModuleMs);
  }

  function rebuildEnded(slot: Slot<unknown>): void {
    clearTimeout(slot.rebuildTimer);
    slot.rebuildTimer = undefined;
    slot.rebuilding = false;
  }

  function ended(slot: Slot<unknown>): void {
    clearTimeout(slot.moduleTimer);
    slot.moduleTimer = undefined;
    slot.loading = undefined;
  }

  /** Bound what comes next (module `key`'s load, or a rebuild's steps between loads). */
  function timed(slot: Slot<unknown>, key: string | undefined): void {
    slot.moduleTimer = setTimeout(() => {
      logger.warn(
        { mappingId: key === undefined ? undefined : mappingOf.get(key), ms: perModuleMs },
        key === undefined
          ? 'transform process did not go on with its rebuild in time; restarting it'
          : 'transform module did not load in time; restarting its process',
      );
      slot.blamed = key;
      stopSlot(slot, 'load_timeout');
    }, perModuleMs);
  }

  function loading(slot: Slot<unknown>, key: string): boolean {
    const order = slot.loadOrder ?? [];
    const turn = slot.state === 'starting' || slot.rebuilding === true;
    if (!turn || order[slot.loadNext ?? 0] !== key) return false;
    slot.loadNext = (slot.loadNext ?? 0) + 1;
    slot.loading = key;
    timed(slot, key);
    return true;
  }

  return {
    spawned(slot, keys) {
      ended(slot);
      slot.loadOrder = keys;
      slot.loadNext = 0;
      rebuildEnded(slot);
      slot.answeredSinceRebuild = false;
      slot.blamed = undefined;
    },
    answered(slot) {
      slot.answeredSinceRebuild = true;
    },
    heard(slot) {
      ended(slot);
      // While deadlines wait on a rebuild, something bounds it at every step: a process that
      // said 'rebuilding' and then nothing would otherwise hold its calls for ever.
      if (slot.rebuilding) timed(slot, undefined);
    },
    loadMessage(slot, message) {
      if (message.type === 'loading') {
        ended(slot);
        return loading(slot, message.key);
      }
      if (message.type === 'rebuilding') {
        // Every rebuild follows an answer (transform-process.ts rebuilds after a call).
        if (slot.state !== 'ready' || slot.rebuilding || !slot.answeredSinceRebuild) return false;
        slot.rebuilding = true;
        slot.answeredSinceRebuild = false;
        slot.loadNext = 0;
        pause(slot);
        timed(slot, undefined);
        rebuildBound(slot);
        return true;
      }
      ended(slot);
      if (!slot.rebuilding) return false;
      rebuildEnded(slot);
      resume(slot);
      return true;
    },
    exited(slot, crashed) {
      const suspect = crashed ? slot.loading : slot.blamed;
      // Killed for a load (or a rebuild) that did not go on counts as dying in it.
      const loading =
        (slot.rebuilding === true || slot.loading !== undefined) &&
        (crashed || slot.stopReason === 'load_timeout');
      ended(slot);
      slot.blamed = undefined;
      rebuildEnded(slot);
      return suspect === undefined ? { loading } : { suspect, loading };
    },
  };
}
