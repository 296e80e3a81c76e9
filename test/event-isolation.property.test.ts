/**
 * Properties of narrowing a refused heartbeat down to the event the runner
 * refuses (engine/runtime/event-isolation.ts), over a model of the pending
 * queue: heartbeats take the oldest events the plan allows, the runner
 * refuses a turn that carries a poisoned event (and every turn during an
 * outage), an answered turn consumes its events.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import {
  afterHeartbeat,
  type Isolation,
  type IsolationPlan,
  MAX_SUSPECTS,
  NO_ISOLATION,
  planNext,
} from '../engine/runtime/event-isolation.ts';

type Model = {
  pending: number[];
  consumed: Set<number>;
  setAside: Set<number>;
  state: Isolation;
  turns: number;
  refusals: number;
};

function batchOf(model: Model, plan: IsolationPlan, maxEvents: number): number[] {
  if (plan.kind === 'alone') return model.pending.includes(plan.seq) ? [plan.seq] : [];
  const limit = Math.min(maxEvents, plan.limit ?? maxEvents);
  return model.pending.filter((seq) => !plan.exclude.has(seq)).slice(0, limit);
}

/** One heartbeat; returns whether another follows at once (as the heartbeat asks for one). */
function beat(
  model: Model,
  poison: ReadonlySet<number>,
  maxEvents: number,
  down: boolean,
): boolean {
  const plan = planNext(model.state);
  const seqs = batchOf(model, plan, maxEvents);
  const refused = down || seqs.some((seq) => poison.has(seq));
  const step = afterHeartbeat(model.state, plan, seqs, refused ? 'refused' : 'answered');
  model.state = step.state;
  model.turns += 1;
  const gone = new Set(refused ? step.setAside : seqs);
  for (const seq of step.setAside) model.setAside.add(seq);
  if (!refused) for (const seq of seqs) model.consumed.add(seq);
  // Events left that the plan did not take (as nextBatch tells), before this turn's end.
  const more =
    plan.kind === 'alone'
      ? model.pending.some((seq) => seq !== plan.seq)
      : model.pending.filter((seq) => !plan.exclude.has(seq)).length > seqs.length;
  model.pending = model.pending.filter((seq) => !gone.has(seq));
  if (refused) {
    model.refusals += 1;
    // The heartbeat's rule: the narrowing's next step, or the backlog once the way is clear.
    return step.next || (step.setAside.length > 0 && more);
  }
  // A heartbeat asked for now with events left for want of room is followed by another.
  return step.next || more;
}

function fresh(events: number): Model {
  return {
    pending: Array.from({ length: events }, (_, i) => i + 1),
    consumed: new Set(),
    setAside: new Set(),
    state: NO_ISOLATION,
    turns: 0,
    refusals: 0,
  };
}

const queue = fc
  .record({ events: fc.integer({ min: 1, max: 300 }), maxEvents: fc.integer({ min: 1, max: 100 }) })
  .chain(({ events, maxEvents }) =>
    fc.record({
      events: fc.constant(events),
      maxEvents: fc.constant(maxEvents),
      poison: fc.uniqueArray(fc.integer({ min: 1, max: events }), { maxLength: 8 }),
    }),
  );

test.prop([queue])(
  'one wake asking now is enough: every poisoned event is set aside, every other one reaches the agent',
  ({ events, maxEvents, poison }) => {
    const bad = new Set(poison);
    const model = fresh(events);
    // Only the heartbeat's own follow-ups after the first request: no other wake comes.
    let follow = true;
    for (let i = 0; follow && i < 100_000; i++) follow = beat(model, bad, maxEvents, false);
    expect(model.pending).toEqual([]);
    expect([...model.setAside].sort((a, b) => a - b)).toEqual([...bad].sort((a, b) => a - b));
    for (const seq of bad) expect(model.consumed.has(seq)).toBe(false);
    // Narrowing costs about two refusals per halving of a batch, and three turns per suspect.
    const depth = Math.ceil(Math.log2(maxEvents)) + 1;
    expect(model.refusals).toBeLessThanOrEqual(bad.size * (2 * depth + 2));
  },
);

test.prop([queue, fc.integer({ min: 1, max: 500 })])(
  'an outage (every turn refused) sets nothing aside and consumes nothing, however long',
  ({ events, maxEvents }, turns) => {
    const model = fresh(events);
    for (let i = 0; i < turns; i++) beat(model, new Set(), maxEvents, true);
    expect(model.setAside.size).toBe(0);
    expect(model.consumed.size).toBe(0);
    expect(model.pending).toHaveLength(events);
    expect(model.state.suspects.length).toBeLessThanOrEqual(MAX_SUSPECTS);
  },
);

test.prop([queue, fc.array(fc.boolean(), { maxLength: 200 })])(
  'after outages at any turns, triggers drain the queue; no poisoned event is ever consumed',
  ({ events, maxEvents, poison }, outage) => {
    const bad = new Set(poison);
    const model = fresh(events);
    // Turns during outages, then wakes that keep asking until nothing is left.
    for (const down of outage) beat(model, bad, maxEvents, down);
    for (let i = 0; model.pending.length > 0 && i < 100_000; i++)
      beat(model, bad, maxEvents, false);
    expect(model.pending).toEqual([]);
    for (const seq of bad) expect(model.setAside.has(seq)).toBe(true);
    // An event that was not poisoned is set aside only if its confirming turn fell in an outage.
    const wronged = [...model.setAside].filter((seq) => !bad.has(seq));
    expect(wronged.length).toBeLessThanOrEqual(outage.filter(Boolean).length);
  },
);

test('the planned batches narrow a refused one by halves and hold a lone refused event out', () => {
  let state = NO_ISOLATION;
  const refused = (seqs: number[]) => {
    const step = afterHeartbeat(state, planNext(state), seqs, 'refused');
    state = step.state;
    return step;
  };
  expect(refused([1, 2, 3, 4, 5]).next).toBe(true);
  expect(planNext(state)).toEqual({ kind: 'batch', limit: 3, exclude: new Set() });
  refused([1, 2, 3]);
  expect(planNext(state)).toEqual({ kind: 'batch', limit: 2, exclude: new Set() });
  refused([1, 2]);
  refused([1]);
  // Held out, and the others go on in full batches.
  expect(planNext(state)).toEqual({ kind: 'batch', exclude: new Set([1]) });
  const answered = afterHeartbeat(state, planNext(state), [2, 3, 4, 5], 'answered');
  state = answered.state;
  expect(answered.next).toBe(true);
  expect(planNext(state)).toEqual({ kind: 'alone', seq: 1 });
  expect(refused([1]).setAside).toEqual([1]);
  expect(state).toEqual(NO_ISOLATION);
});
