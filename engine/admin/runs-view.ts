/**
 * The console's view of the runtime's runs: one action's state, attempts,
 * reply and delivery outcome, and the retry of a dead or failed one (as
 * `hookgate retry --failed` does). Over the runtime store the wiring passes.
 */
import type { RunRow, RuntimeStore } from '../runtime/runtime-store.ts';
import { clipUnits } from '../text-cut.ts';
import type { RunsAccess, RunView } from './deps.ts';

// A reply or a reason is the agent's text: bounded in what the console receives.
const TEXT_LIMIT = 16_384;

/** The runs of a runtime store as the admin listener reads them. */
export function runsView(store: Pick<RuntimeStore, 'run' | 'retryDead' | 'states'>): RunsAccess {
  return {
    async get(actionId) {
      const row = await store.run(actionId);
      return row ? toView(row) : undefined;
    },
    states: (actionIds) => store.states(actionIds),
    async retry(actionId) {
      const row = await store.run(actionId);
      if (!row) return { ok: false, refusal: 'not_found', reason: 'no such run' };
      if (row.state !== 'dead' && row.state !== 'failed') {
        return {
          ok: false,
          refusal: 'not_retryable',
          reason: `the run is ${row.state}, not dead or failed`,
        };
      }
      // The state may change between the read and the update: retryDead decides.
      return (await store.retryDead(actionId, { failed: true }))
        ? { ok: true }
        : { ok: false, refusal: 'not_retryable', reason: 'the run is no longer dead or failed' };
    },
  };
}

/** A stored run as the console shows it. Pure. */
export function toView(row: RunRow): RunView {
  const outcome = row.outcome;
  return {
    id: row.id,
    state: row.state,
    attempts: row.attempts,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    ...(outcome && { status: outcome.status }),
    ...(outcome?.reply !== undefined && { reply: bounded(outcome.reply) }),
    ...(outcome?.reason !== undefined && { reason: bounded(outcome.reason) }),
    ...(outcome?.delivery && {
      delivery: {
        ...outcome.delivery,
        ...(outcome.delivery.reason !== undefined && {
          reason: bounded(outcome.delivery.reason),
        }),
      },
    }),
  };
}

function bounded(text: string): string {
  return clipUnits(text, TEXT_LIMIT);
}
