/**
 * The calls sent to the transform processes, from when one is handed to a
 * process until it is settled: its deadline, its answer, and what a kill
 * makes of the calls a process held. A process runs one call at a time and
 * says with each answer which one it starts next (it takes its mappings in
 * turn); the deadline runs from the moment it starts on the call (when it
 * is sent to a process running none, or when the answer before it names
 * it). A call that misses it fails with transform_timeout and only its
 * process is killed; the process's other calls go back to the queue,
 * charged as kill-charges.ts decides.
 */
import { HookError } from '../errors.ts';
import {
  type FailureReason,
  failureMessage,
  outcomeOf,
  type TransformResult,
} from './call-outcome.ts';
import type { CallQueue } from './call-queue.ts';
import { chargeKill, type Kill } from './kill-charges.ts';
import type { Logger } from '../log.ts';
import { type Slot, stopSlot } from './process-slot.ts';
import type { ResultMessage } from './protocol.ts';
import type { TransformLog } from './transform-log.ts';

export type Call = {
  /** Fixed when the call is made: a call sent again after a kill goes to a fresh process. */
  id: number;
  key: string;
  /** The encoded call command: all the server holds of the call's input. */
  frame: Buffer;
  /** What the call holds in maxWaitingBytes: its frame and its caller's raw body. */
  bytes: number;
  resolve: (r: TransformResult) => void;
  reject: (e: HookError) => void;
  /** Kills of its own module it was sent again after (see requeueAll). */
  charged: number;
  /** Crashes it was present at, whoever's call was running. */
  crashes: number;
  timer?: NodeJS.Timeout;
};

export type ProcessCalls = {
  /** Hand a call to the slot's ready process. */
  send(slot: Slot<Call>, call: Call): void;
  /**
   * Settle the call a result answers; false when the process is lying: it never held that call,
   * the call was not the one it runs, or the next one it names is not one it holds.
   */
  answer(slot: Slot<Call>, message: ResultMessage): boolean;
  /** The slot's process died on its own: fail the call it was running, send the others again. */
  crashed(slot: Slot<Call>): void;
  /**
   * The slot's process died or was killed loading its modules (module `key`, if known): no call
   * had started, so all are sent again, that module's charged for it (kill-charges.ts).
   */
  diedLoading(slot: Slot<Call>, key: string | undefined): void;
  /** Fail every call the slot's process held (it is being stopped for good or for lying). */
  failAll(slot: Slot<Call>, kind: FailureReason): void;
  /** The process rebuilds its isolate: the call it would start next has not started. */
  pause(slot: Slot<Call>): void;
  /** The rebuild is done: the running call starts now. */
  resume(slot: Slot<Call>): void;
};

/** The calls of one supervisor; `pump` hands it queued calls once a process has room. */
export function createProcessCalls(deps: {
  mappingOf: ReadonlyMap<string, string>;
  deadlineMs: number;
  queue: CallQueue<Call>;
  log: TransformLog;
  logger: Logger;
  pump: () => void;
}): ProcessCalls {
  const { mappingOf, deadlineMs, queue, log, logger, pump } = deps;

  function send(slot: Slot<Call>, call: Call): void {
    call.timer = undefined;
    slot.inflight.set(call.id, call);
    // A process running no call starts the first one it is sent.
    slot.running ??= call.id;
    armRunning(slot);
    slot.link?.sendFrame(call.frame);
  }

  function answer(slot: Slot<Call>, message: ResultMessage): boolean {
    const call = slot.inflight.get(message.id);
    // An id never sent to this process, answered already, or not the one it runs: it is lying.
    if (!call || slot.state !== 'ready' || slot.running !== message.id) return false;
    if (message.next !== undefined && !slot.inflight.has(message.next)) return false;
    slot.inflight.delete(message.id);
    clearTimeout(call.timer);
    // Named, or none was waiting in the process: the first call sent since runs on arrival.
    slot.running = message.next ?? slot.inflight.keys().next().value;
    log.console(call.key, message);
    const mappingId = mappingOf.get(call.key);
    if (message.failure) {
      // The reason may quote payload data: only at debug level.
      logger.warn({ mappingId, kind: message.failure.kind }, 'transform failed');
      logger.debug({ mappingId, reason: message.failure.message }, 'transform failure reason');
    }
    const outcome = outcomeOf(mappingId, message);
    if (outcome instanceof HookError) call.reject(outcome);
    else call.resolve(outcome);
    armRunning(slot);
    pump();
    return true;
  }

  /** The call `id` missed its deadline: it fails, its process is killed, the others go back to the queue. */
  function onLate(slot: Slot<Call>, id: number): void {
    const call = slot.inflight.get(id);
    if (!call) return;
    slot.inflight.delete(id);
    const mappingId = mappingOf.get(call.key);
    logger.warn({ mappingId, deadlineMs }, 'transform missed its deadline; restarting its process');
    call.reject(new HookError('transform_timeout', failureMessage(mappingId, 'timeout')));
    stopSlot(slot, 'timeout');
    // The others were waiting behind it, not running: another mapping's never pay for it.
    requeueAll(slot, { cause: 'timeout', key: call.key });
  }

  /**
   * The process died on its own (an abort on a catastrophic isolate error, say): the call it was
   * running fails, the others are sent again.
   */
  function crashed(slot: Slot<Call>): void {
    const id = slot.running;
    const call = id === undefined ? undefined : slot.inflight.get(id);
    if (id === undefined || !call) return;
    slot.inflight.delete(id);
    clearTimeout(call.timer);
    call.reject(
      new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'crash')),
    );
    requeueAll(slot, { cause: 'crash', key: call.key });
  }

  /**
   * Calls a killed process held go back to the front of the queue; those charged for the `kill`
   * count it, and one charged too often fails (kill-charges.ts).
   */
  function requeueAll(slot: Slot<Call>, kill: Kill): void {
    const again: Call[] = [];
    for (const call of slot.inflight.values()) {
      clearTimeout(call.timer);
      call.timer = undefined;
      const charge = chargeKill(kill, call);
      call.charged = charge.charged;
      call.crashes = charge.crashes;
      if (!charge.again)
        call.reject(
          new HookError('transform_failed', failureMessage(mappingOf.get(call.key), 'crash')),
        );
      else again.push(call);
    }
    slot.inflight.clear();
    slot.running = undefined;
    for (const call of again) queue.add(call, true);
    pump();
  }

  function failAll(slot: Slot<Call>, kind: FailureReason): void {
    for (const call of slot.inflight.values()) {
      clearTimeout(call.timer);
      call.reject(new HookError('transform_failed', failureMessage(mappingOf.get(call.key), kind)));
    }
    slot.inflight.clear();
    slot.running = undefined;
  }

  /**
   * The deadline runs for the call the process runs (it runs one at a time). The calls it holds
   * beside it are waiting, not late, so each starts its own deadline when it starts.
   */
  function armRunning(slot: Slot<Call>): void {
    if (slot.rebuilding || slot.running === undefined) return;
    const call = slot.inflight.get(slot.running);
    if (!call) return;
    const id = slot.running;
    // Decided after the loop's next poll for I/O (setImmediate runs after it): when the loop
    // was busy past the deadline, an answer already in the pipe is read first and wins.
    call.timer ??= setTimeout(() => setImmediate(() => onLate(slot, id)), deadlineMs);
  }

  function pause(slot: Slot<Call>): void {
    const call = slot.running === undefined ? undefined : slot.inflight.get(slot.running);
    if (!call) return;
    clearTimeout(call.timer);
    call.timer = undefined;
  }

  function diedLoading(slot: Slot<Call>, key: string | undefined): void {
    requeueAll(slot, { cause: 'crash', key: key ?? '' });
  }

  return { send, answer, crashed, diedLoading, failAll, pause, resume: armRunning };
}
