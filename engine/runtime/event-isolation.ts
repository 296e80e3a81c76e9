/**
 * Finding the event a runner refuses. A heartbeat the runner refuses for
 * good (its final error, or its timeout) leaves its events pending, and the
 * next heartbeat takes the same oldest events first: one event the agent's
 * provider always refuses (a content filter's 400 for its text) would fail
 * every later heartbeat and hold the main session. So a refused batch is
 * narrowed, halving it, until one event is refused alone; that event is held
 * out while the others go on, and is set aside (kept, consumed by the
 * heartbeat that refused it) only once it is refused alone again after a
 * heartbeat without it was answered. While every turn fails (an outage, a
 * wrong key) nothing is answered, so nothing is set aside. With as many
 * suspects held out as it keeps, the next heartbeat carries no event (the
 * prompt alone): answered, it clears them for their confirmation, so a run
 * of refused events is set aside a few at a time rather than holding the
 * session. Pure: the heartbeat keeps the state and does the I/O.
 */

/** Events refused alone held out at once, at most; then a heartbeat without events tests the runner. */
export const MAX_SUSPECTS = 3;

export type Suspect = {
  seq: number;
  /** A heartbeat without it was answered after it was refused alone. */
  cleared: boolean;
};

export type Isolation = {
  /** Most events the next heartbeat takes while a refused batch is narrowed. */
  limit?: number;
  /** The highest seq of the refused batch being narrowed. */
  narrowing?: number;
  /** Events refused alone, held out of every batch, oldest first. */
  suspects: readonly Suspect[];
};

/** What the next heartbeat takes. */
export type IsolationPlan =
  | { kind: 'batch'; limit?: number; exclude: ReadonlySet<number> }
  | { kind: 'alone'; seq: number };

/** How the runner took the heartbeat's turn. */
export type TurnOutcome = 'answered' | 'refused' | 'not-run';

export type IsolationStep = {
  state: Isolation;
  /** Events to set aside with this heartbeat's end. */
  setAside: number[];
  /** Another heartbeat should follow to go on narrowing or confirming. */
  next: boolean;
  /** This heartbeat's event was refused alone and held out: its narrowing is over. */
  found?: boolean;
};

export const NO_ISOLATION: Isolation = { suspects: [] };

/**
 * The next heartbeat: a cleared suspect alone (its confirmation); with every suspect slot taken,
 * no event (whether the runner answers at all); else the batch without the suspects.
 */
export function planNext(state: Isolation): IsolationPlan {
  const cleared = state.suspects.find((suspect) => suspect.cleared);
  if (cleared) return { kind: 'alone', seq: cleared.seq };
  const exclude = new Set(state.suspects.map((suspect) => suspect.seq));
  if (state.suspects.length >= MAX_SUSPECTS) return { kind: 'batch', limit: 0, exclude };
  return { kind: 'batch', ...(state.limit !== undefined && { limit: state.limit }), exclude };
}

/** The state after a heartbeat that took `seqs` as `plan` said, and what follows. */
export function afterHeartbeat(
  state: Isolation,
  plan: IsolationPlan,
  seqs: readonly number[],
  outcome: TurnOutcome,
): IsolationStep {
  // The turn did not happen (unreachable, 429, 5xx): it says nothing of the events.
  if (outcome === 'not-run') return { state, setAside: [], next: false };
  if (plan.kind === 'alone') return afterAlone(state, plan.seq, seqs, outcome);
  return outcome === 'answered' ? afterAnswered(state, seqs) : afterRefused(state, seqs);
}

function afterAlone(
  state: Isolation,
  seq: number,
  seqs: readonly number[],
  outcome: 'answered' | 'refused',
): IsolationStep {
  const rest = state.suspects.filter((suspect) => suspect.seq !== seq);
  const next = rest.some((suspect) => suspect.cleared);
  // Gone meanwhile (consumed by another leader, or too large for the budget now): let go of it.
  if (!seqs.includes(seq)) return { state: { ...state, suspects: rest }, setAside: [], next };
  // Answered: it went through after all (consumed as any event). Refused: the runner answers
  // others but not this one.
  return {
    state: { ...state, suspects: rest },
    setAside: outcome === 'refused' ? [seq] : [],
    next,
  };
}

function afterAnswered(state: Isolation, seqs: readonly number[]): IsolationStep {
  // The runner works: every suspect is now refused for what it says, if refused alone again.
  const suspects = state.suspects.map((suspect) => ({ ...suspect, cleared: true }));
  const confirm = suspects.length > 0;
  const last = seqs.length > 0 ? Math.max(...seqs) : undefined;
  const narrowing = state.narrowing;
  // Still inside the refused batch: the event it refused for is further on.
  if (narrowing !== undefined && last !== undefined && last < narrowing) {
    return { state: { ...state, suspects }, setAside: [], next: true };
  }
  return { state: { suspects }, setAside: [], next: confirm };
}

function afterRefused(state: Isolation, seqs: readonly number[]): IsolationStep {
  if (seqs.length > 1) {
    return {
      state: {
        ...state,
        limit: Math.ceil(seqs.length / 2),
        narrowing: Math.max(...seqs),
      },
      setAside: [],
      next: true,
    };
  }
  const [seq] = seqs;
  // The prompt alone refused: the runner refuses everything (an outage), nothing to narrow.
  if (seq === undefined || state.suspects.length >= MAX_SUSPECTS) {
    return { state, setAside: [], next: false };
  }
  // Refused alone: held out, and the rest go on in full batches.
  return {
    state: { suspects: [...state.suspects, { seq, cleared: false }] },
    setAside: [],
    next: true,
    found: true,
  };
}
