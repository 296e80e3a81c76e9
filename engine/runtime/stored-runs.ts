/**
 * Decisions about stored runs that every store makes the same way: what a
 * stored wake holds, how a row no hook could have written ends, and what a
 * retried run keeps of its outcome. Pure.
 */
import type { Action } from '../../schemas/action.ts';
import { restoredAction } from '../store/stored-action.ts';
import type { NewEvent, Outcome } from './runtime-store.ts';

export type WakeAction = Extract<Action, { kind: 'wake' }>;

/** The outcome of a row no hook could have written (another process, a damaged file). */
export const UNREADABLE_OUTCOME: Outcome = { status: 'error', reason: 'unreadable action' };

/**
 * Whether a stored action has the shape a run needs (what every hook writes): an object whose
 * kind is `wake`, or `agent` with its session key. Anything else (another writer, damage) is
 * ended as unreadable once claimed, instead of run.
 */
export function isRunnableAction(value: unknown): value is Action {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const { kind, sessionKey } = value as { kind?: unknown; sessionKey?: unknown };
  return kind === 'wake' || (kind === 'agent' && typeof sessionKey === 'string');
}

/** What applying a wake appends to the main session: its text as the agent gets it (wrapped when untrusted). */
export function wakeEvent(wake: WakeAction, mainKey: string): NewEvent {
  return {
    sessionKey: mainKey,
    text: wake.prompt ?? wake.text,
    source: 'wake',
    actionId: wake.id,
    trusted: !wake.untrusted,
  };
}

/** A stored wake, or undefined when the text does not hold one. */
export function readWake(json: string): WakeAction | undefined {
  try {
    const action = restoredAction(JSON.parse(json) as WakeAction | null);
    return action?.kind === 'wake' && typeof action.text === 'string' ? action : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a run sent back by `retry` keeps: a run that died delivering keeps its reply, so the
 * retry redoes only the delivery (with fresh delivery attempts); any other starts afresh.
 */
export function outcomeForRetry(outcome: Outcome | null): Outcome | null {
  if (outcome?.reply === undefined || outcome.delivery === undefined) return null;
  return { ...outcome, status: 'delivering', delivery: { ...outcome.delivery, attempts: 0 } };
}
