/**
 * The kill test's verdict, as a pure function of what the producers saw
 * acknowledged, what the store holds and what the runner recorded: lost
 * acknowledgements, duplicate actions, session order in the store and in
 * completion, and runs of one session overlapping in time. A re-executed
 * run (its instance died after running it, before recording it done) is
 * counted, not refused: delivery is at least once.
 */

/** A request answered 200: session, its place k in the session, and the action id answered. */
export type AckedRequest = { session: string; k: number; runId: string };

/** An action as stored: its id, store order, session, and the (session, k) its text names. */
export type StoredAction = { id: string; seq: number; session: string; k: number };

/** One line of the runner: an execution (pid) of a run starting or ending, at a time in ms. */
export type RunnerRecord = {
  runId: string;
  session: string;
  pid: number;
  phase: 'start' | 'end';
  at: number;
};

export type KillVerdict = {
  acked: number;
  /** Acknowledged actions the store does not hold. */
  lost: number;
  /** Acknowledgements naming an action stored for another request (another session or k). */
  misanswered: number;
  /** Actions stored beyond the first for one (session, k): one key must give one action. */
  duplicates: number;
  /** Neighbours in a session's store order (seq) whose k goes backwards. */
  storeOrderViolations: number;
  /** Neighbours in a session's k order whose later action first completed earlier. */
  completionOrderViolations: number;
  /** Executions starting before an earlier-started execution of their session ended. */
  overlaps: number;
  /** Actions executed more than once (at least once after a kill). */
  reExecuted: number;
  /** Acknowledged actions with no completed execution recorded. */
  neverCompleted: number;
  /** Executions that started and never recorded an end (their process was killed). */
  interrupted: number;
};

type Execution = { runId: string; start: number; end: number | undefined };

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const name = key(item);
    const group = groups.get(name);
    if (group) group.push(item);
    else groups.set(name, [item]);
  }
  return groups;
}

/** Executions per session: one per (runId, pid), with its end when one was recorded. */
function executions(records: readonly RunnerRecord[]): Map<string, Execution[]> {
  const byRun = new Map<string, { session: string } & Execution>();
  for (const record of records) {
    const id = `${record.runId}\u0000${record.pid}`;
    const found = byRun.get(id) ?? {
      session: record.session,
      runId: record.runId,
      start: record.at,
      end: undefined,
    };
    if (record.phase === 'start') found.start = record.at;
    else found.end = record.at;
    byRun.set(id, found);
  }
  return groupBy([...byRun.values()], (execution) => execution.session);
}

/** Check the run against every rule; every count is 0 on a correct run. */
export function checkKillRun(input: {
  acked: readonly AckedRequest[];
  stored: readonly StoredAction[];
  records: readonly RunnerRecord[];
}): KillVerdict {
  const byId = new Map(input.stored.map((row) => [row.id, row]));
  let lost = 0;
  let misanswered = 0;
  for (const ack of input.acked) {
    const row = byId.get(ack.runId);
    if (!row) lost++;
    else if (row.session !== ack.session || row.k !== ack.k) misanswered++;
  }

  let duplicates = 0;
  for (const rows of groupBy(input.stored, (row) => `${row.session}\u0000${row.k}`).values())
    duplicates += rows.length - 1;

  let storeOrderViolations = 0;
  for (const rows of groupBy(input.stored, (row) => row.session).values()) {
    const ordered = [...rows].sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < ordered.length; i++)
      if ((ordered[i] as StoredAction).k < (ordered[i - 1] as StoredAction).k)
        storeOrderViolations++;
  }

  const bySession = executions(input.records);
  const firstEnd = new Map<string, number>();
  const runCount = new Map<string, number>();
  let interrupted = 0;
  let overlaps = 0;
  for (const runs of bySession.values()) {
    for (const run of runs) {
      runCount.set(run.runId, (runCount.get(run.runId) ?? 0) + 1);
      if (run.end === undefined) interrupted++;
      else firstEnd.set(run.runId, Math.min(firstEnd.get(run.runId) ?? run.end, run.end));
    }
    // An interrupted execution's end is unknown: it counts from its start only.
    const ordered = [...runs].sort((a, b) => a.start - b.start);
    let latestEnd = Number.NEGATIVE_INFINITY;
    for (const run of ordered) {
      if (run.start < latestEnd) overlaps++;
      latestEnd = Math.max(latestEnd, run.end ?? run.start);
    }
  }
  const reExecuted = [...runCount.values()].filter((count) => count > 1).length;

  let completionOrderViolations = 0;
  let neverCompleted = 0;
  for (const acks of groupBy(input.acked, (ack) => ack.session).values()) {
    const ordered = [...acks].sort((a, b) => a.k - b.k);
    let previous: number | undefined;
    for (const ack of ordered) {
      const end = firstEnd.get(ack.runId);
      if (end === undefined) {
        neverCompleted++;
        continue;
      }
      if (previous !== undefined && end < previous) completionOrderViolations++;
      previous = end;
    }
  }

  return {
    acked: input.acked.length,
    lost,
    misanswered,
    duplicates,
    storeOrderViolations,
    completionOrderViolations,
    overlaps,
    reExecuted,
    neverCompleted,
    interrupted,
  };
}
