/**
 * The kill test's checker on small hand-made runs: a correct run (with a
 * re-execution after a kill) passes, and each broken guarantee is counted.
 */
import { describe, expect, it } from 'vitest';
import {
  type AckedRequest,
  checkKillRun,
  type RunnerRecord,
  type StoredAction,
} from './helpers/kill-check.ts';

const S = 'hook:s1';
const T = 'hook:s2';

const ack = (session: string, k: number): AckedRequest => ({
  session,
  k,
  runId: `${session}-${k}`,
});
const row = (session: string, k: number, seq: number): StoredAction => ({
  id: `${session}-${k}`,
  seq,
  session,
  k,
});
/** One execution (pid) of session/k's run from start to end (no end: it was killed). */
function exec(
  session: string,
  k: number,
  pid: number,
  start: number,
  end?: number,
): RunnerRecord[] {
  const runId = `${session}-${k}`;
  const records: RunnerRecord[] = [{ runId, session, pid, phase: 'start', at: start }];
  if (end !== undefined) records.push({ runId, session, pid, phase: 'end', at: end });
  return records;
}

const acked = [ack(S, 0), ack(S, 1), ack(S, 2), ack(T, 0), ack(T, 1)];
const stored = [row(S, 0, 1), row(T, 0, 2), row(S, 1, 3), row(T, 1, 4), row(S, 2, 5)];
const records = [
  ...exec(S, 0, 100, 0, 10),
  ...exec(T, 0, 101, 2, 12),
  ...exec(S, 1, 102, 11, 20),
  ...exec(T, 1, 103, 13, 30),
  ...exec(S, 2, 104, 21, 29),
];

const clean = {
  acked: 5,
  lost: 0,
  misanswered: 0,
  duplicates: 0,
  storeOrderViolations: 0,
  completionOrderViolations: 0,
  overlaps: 0,
  reExecuted: 0,
  neverCompleted: 0,
  interrupted: 0,
};

describe('the kill test checker', () => {
  it('finds nothing wrong in a correct run', () => {
    expect(checkKillRun({ acked, stored, records })).toEqual(clean);
  });

  it('accepts a run executed again after its instance died, when it ends before the next', () => {
    // S/1 ran on the killed instance (pid 102), never marked done, and ran again (pid 202).
    const again = [
      ...records.filter((r) => r.runId !== `${S}-2`),
      ...exec(S, 1, 202, 40, 45),
      ...exec(S, 2, 104, 46, 50),
    ];
    expect(checkKillRun({ acked, stored, records: again })).toEqual({ ...clean, reExecuted: 1 });
  });

  it('counts an acknowledged action the store does not hold as lost', () => {
    const verdict = checkKillRun({
      acked,
      stored: stored.filter((r) => r.id !== `${T}-1`),
      records,
    });
    expect(verdict.lost).toBe(1);
  });

  it('counts an acknowledgement naming the action of another request', () => {
    const mixed = [...acked.slice(0, 4), { ...ack(T, 1), runId: `${T}-0` }];
    expect(checkKillRun({ acked: mixed, stored, records }).misanswered).toBe(1);
  });

  it('counts a second action for one idempotency key as a duplicate', () => {
    const verdict = checkKillRun({
      acked,
      stored: [...stored, { ...row(S, 1, 6), id: 'another' }],
      records,
    });
    expect(verdict.duplicates).toBe(1);
    // Stored after S/2, it is also out of store order.
    expect(verdict.storeOrderViolations).toBe(1);
  });

  it('counts a session stored out of its send order', () => {
    const swapped = [row(S, 0, 1), row(T, 0, 2), row(S, 1, 5), row(T, 1, 4), row(S, 2, 3)];
    expect(checkKillRun({ acked, stored: swapped, records }).storeOrderViolations).toBe(1);
  });

  it('counts a later action of a session completing before an earlier one', () => {
    const early = [
      ...records.filter((r) => r.session !== S),
      ...exec(S, 0, 100, 0, 10),
      ...exec(S, 2, 104, 11, 15),
      ...exec(S, 1, 102, 16, 20),
    ];
    const verdict = checkKillRun({ acked, stored, records: early });
    expect(verdict.completionOrderViolations).toBe(1);
    expect(verdict.overlaps).toBe(0);
  });

  it('counts runs of one session overlapping in time, even when they end in order', () => {
    const overlapping = [
      ...records.filter((r) => r.session !== S),
      ...exec(S, 0, 100, 0, 10),
      ...exec(S, 1, 102, 5, 20),
      ...exec(S, 2, 104, 21, 29),
    ];
    const verdict = checkKillRun({ acked, stored, records: overlapping });
    expect(verdict.overlaps).toBe(1);
    expect(verdict.completionOrderViolations).toBe(0);
  });

  it('counts a re-execution overlapping the next run of its session (an orphaned runner)', () => {
    // The killed instance's runner of S/1 (pid 102) goes on until 60 while S/1 ran again and S/2 ran.
    const orphan = [
      ...records.filter((r) => r.session !== S),
      ...exec(S, 0, 100, 0, 10),
      ...exec(S, 1, 102, 11, 60),
      ...exec(S, 1, 202, 40, 45),
      ...exec(S, 2, 104, 46, 50),
    ];
    const verdict = checkKillRun({ acked, stored, records: orphan });
    expect(verdict.overlaps).toBe(2);
    expect(verdict.reExecuted).toBe(1);
  });

  it('counts an execution killed before its end as interrupted, and an action never completed', () => {
    const killed = [...records.filter((r) => r.runId !== `${T}-1`), ...exec(T, 1, 103, 13)];
    const verdict = checkKillRun({ acked, stored, records: killed });
    expect(verdict.interrupted).toBe(1);
    expect(verdict.neverCompleted).toBe(1);
    expect(verdict.overlaps).toBe(0);
  });
});
