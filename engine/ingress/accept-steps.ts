/**
 * The accept step of each kind of route: the built-in `wake` and `agent`
 * triggers validate their payload against schemas/ and build one action;
 * a mapped route selects its mapping and builds that mapping's actions.
 */
import type { Action } from '../../schemas/action.ts';
import { type Accepted, acceptanceBody, buildAgentAction, buildWakeAction } from '../actions.ts';
import type { Envelope } from '../envelope.ts';
import { HookError } from '../errors.ts';
import { buildMappedActions, type MappedContext, ruleData } from '../mapped-route.ts';
import type { CompiledMapping } from '../mappings.ts';
import { validateAgent, validateWake } from '../payload-validators.ts';
import { type Selection, selectMapping } from '../rules.ts';
import type { Validator } from '../validation.ts';

/**
 * Turns an envelope into accepted actions, or throws a HookError. A mapped route reports its
 * selection first (for `hookgate test`, also when building then fails).
 */
export type AcceptStep = (
  envelope: Envelope,
  report?: (selection: Selection) => void,
) => Accepted | Promise<Accepted>;

/** Validate a payload or throw invalid_payload naming the field. */
function validated<T>(check: Validator<T>, payload: unknown): T {
  const result = check(payload);
  if (result.ok) return result.value;
  const field = result.field || 'body';
  throw new HookError('invalid_payload', `${field}: ${result.message}`);
}

function single(action: Action): Accepted {
  return { actions: [action], response: acceptanceBody([action], false) };
}

/** The accept step of `/wake` or `/agent`. */
export function builtInAccept(name: 'wake' | 'agent', ctx: MappedContext): AcceptStep {
  if (name === 'wake') {
    return (envelope) =>
      single(buildWakeAction(envelope, validated(validateWake, envelope.payload), ctx));
  }
  return (envelope) =>
    single(buildAgentAction(envelope, validated(validateAgent, envelope.payload), ctx));
}

/** The accept step of a mapped route: the first matching mapping builds; none matching is 204. */
export function mappedAccept(mappings: readonly CompiledMapping[], ctx: MappedContext): AcceptStep {
  return function acceptMapped(envelope, report) {
    const data = ruleData(envelope);
    const selection = selectMapping(mappings, data);
    report?.(selection);
    // Mappings exist for this name but none matched: a deliberate drop, 204.
    if (!selection.mapping) return { actions: [], response: null };
    return buildMappedActions(selection.mapping, envelope, data, ctx);
  };
}
