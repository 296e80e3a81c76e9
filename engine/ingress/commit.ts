/**
 * The accept and commit stages: the route builds its actions, then the
 * actions and their key are stored durably before the answer is written
 * (nothing accepted is lost). Nothing to store answers without a write.
 */
import type { Accepted } from '../actions.ts';
import type { Ledger } from '../dispatcher.ts';
import { withoutPayload } from '../envelope.ts';
import { type Answer, type Exchange, had, type Stage } from './exchange.ts';
import { replayAnswer } from './replay.ts';

const NOTHING: Answer = Object.freeze({ kind: 'empty', status: 204 });

/** The route's accept step over the envelope; synchronous unless the step is (a transform). */
export function accept(x: Exchange): undefined | Promise<undefined> {
  const step = had(x.route, 'route').accept(had(x.envelope, 'envelope'), (selection) => {
    x.selection = selection;
  });
  if (step instanceof Promise) {
    // The step waits (a transform call). Nothing after it reads the parsed body: it goes now, so
    // a waiting request holds its raw bytes and the call's encoded input, not a parsed tree
    // (a 255 KB body of `{}` parses to ~85,000 objects).
    x.payload = undefined;
    x.envelope = withoutPayload(had(x.envelope, 'envelope'));
    return step.then((accepted) => keepAccepted(x, accepted));
  }
  return keepAccepted(x, step);
}

/** The accepted actions on the exchange, and the names of injection patterns on its log line. */
function keepAccepted(x: Exchange, accepted: Accepted): undefined {
  x.accepted = accepted;
  const patterns = accepted.actions.flatMap((action) => action.safety?.patterns ?? []);
  // Names of injection patterns found in the content (never the content).
  if (patterns.length > 0) x.log['injectionPatterns'] = [...new Set(patterns)];
  return undefined;
}

/** Build the commit stage over a ledger. */
export function createCommit(ledger: Ledger): Stage {
  return async function commit(x: Exchange): Promise<Answer> {
    const accepted = had(x.accepted, 'accepted');
    if (accepted.response === null) return NOTHING;
    // Answered, not stored: a mapping that deliberately runs nothing.
    if (accepted.actions.length === 0) {
      return { kind: 'json', status: 200, body: JSON.stringify(accepted.response) };
    }
    const claims = x.claims ?? [];
    const committed = await ledger.commit(accepted, claims);
    // Another instance stored one of the keys after this request's look-up: its answer wins.
    if (committed.previous) return replayAnswer(x, claims, committed.previous);
    x.log['actionIds'] = accepted.actions.map((action) => action.id);
    return { kind: 'json', status: 200, body: committed.body };
  };
}
