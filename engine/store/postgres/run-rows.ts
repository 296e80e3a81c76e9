/**
 * Reading an action row of the PostgreSQL store as the runtime sees a run.
 * Times come back as Date (timestamptz) and are given as ISO 8601 text, as
 * the SQLite store stores them.
 */
import type { Action } from '../../../schemas/action.ts';
import type { ActionState } from '../../queue/action-store.ts';
import type { Outcome, RunRow } from '../../runtime/runtime-store.ts';
import { restoredAction } from '../stored-action.ts';

/** The columns a run is read from (the action as JSON text, whatever its column type). */
export const RUN_COLUMNS = [
  'seq',
  'id',
  'state',
  'attempts',
  'next_attempt_at',
  'started_at',
  'finished_at',
  'outcome',
  'action',
];

/** A row as the driver gives it. */
export type RunRecord = {
  seq: string;
  id: string;
  state: ActionState;
  attempts: number;
  next_attempt_at: Date | number | string;
  started_at: Date | null;
  finished_at: Date | null;
  outcome: string | null;
  action: string | Record<string, unknown>;
};

/** An ISO 8601 time, or null. */
export function isoTime(value: Date | null | undefined): string | null {
  return value instanceof Date ? value.toISOString() : null;
}

function epochMs(value: RunRecord['next_attempt_at']): number {
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.getTime() : 0;
  // '-infinity' (never waited) comes back as a number or text depending on the driver's parser.
  const parsed = typeof value === 'number' ? value : Date.parse(value);
  return Number.isFinite(parsed) && parsed > 0 ? parsed : 0;
}

/** The run, or undefined when the row holds no readable action (another writer, damage). */
export function readRun(row: RunRecord): RunRow | undefined {
  try {
    const action = restoredAction(
      (typeof row.action === 'string' ? JSON.parse(row.action) : row.action) as Action,
    );
    if (action === null || typeof action !== 'object' || typeof action.kind !== 'string')
      return undefined;
    return {
      seq: Number(row.seq),
      id: row.id,
      state: row.state,
      attempts: row.attempts,
      nextAttemptAtMs: epochMs(row.next_attempt_at),
      startedAt: isoTime(row.started_at),
      finishedAt: isoTime(row.finished_at),
      outcome: row.outcome ? (JSON.parse(row.outcome) as Outcome) : null,
      action,
    };
  } catch {
    return undefined;
  }
}
