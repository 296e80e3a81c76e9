/**
 * The route stage: pick what handles `<hooks_path>/<name>`. The built-in
 * `wake` and `agent` triggers validate their payload against schemas/ and
 * build one action; other names go to the mappings (and presets). The choice
 * is made from the name alone, before the body is read.
 */
import type { Action } from '../schemas/action.ts';
import { type Accepted, acceptanceBody, buildAgentAction, buildWakeAction } from './actions.ts';
import type { Envelope } from './envelope.ts';
import { validateAgent, validateWake } from './payload-validators.ts';
import { HookError } from './errors.ts';
import { buildMappedActions, type MappedContext, selectFor } from './mapped-route.ts';
import type { CompiledMapping } from './mappings.ts';
import { hookIsMapped } from './rules.ts';
import type { Validator } from './validation.ts';

/** Turns an envelope into accepted actions, or throws a HookError. */
export type Route = (envelope: Envelope) => Accepted | Promise<Accepted>;

/** Finds the route for a hook name; throws 404 unknown_hook when nothing serves it. */
export type Router = (hook: string) => Route;

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

/** Build the router for a configuration: built-in triggers first, then mappings. */
export function createRouter(ctx: MappedContext, mappings: readonly CompiledMapping[]): Router {
  const builtIn = new Map<string, Route>([
    [
      'wake',
      (envelope) =>
        single(buildWakeAction(envelope, validated(validateWake, envelope.payload), ctx)),
    ],
    [
      'agent',
      (envelope) =>
        single(buildAgentAction(envelope, validated(validateAgent, envelope.payload), ctx)),
    ],
  ]);
  const mapped: Route = (envelope) => {
    const { selection, data } = selectFor(mappings, envelope);
    // Mappings exist for this name but none matched: a deliberate drop, 204.
    if (!selection.mapping) return { actions: [], response: null };
    return buildMappedActions(selection.mapping, envelope, data, ctx);
  };
  return function route(hook) {
    const found = builtIn.get(hook);
    if (found) return found;
    if (hookIsMapped(mappings, hook)) return mapped;
    throw new HookError('unknown_hook', `No hook named "${hook.slice(0, 100)}".`);
  };
}
