/**
 * The route stage: pick what handles `<hooks_path>/<name>`. The built-in
 * `wake` and `agent` triggers validate their payload against schemas/ and
 * build an action; any other name is an unknown hook (mapped hooks come later).
 */
import {
  type AgentPayload,
  agentPayloadSchema,
  type WakePayload,
  wakePayloadSchema,
} from '../schemas/payloads.ts';
import {
  type Accepted,
  acceptanceBody,
  type BuildContext,
  buildAgentAction,
  buildWakeAction,
} from './actions.ts';
import type { Action } from '../schemas/action.ts';
import type { Envelope } from './envelope.ts';
import { HookError } from './errors.ts';
import { compileValidator, type Validator } from './validation.ts';

/** Turns an envelope into an accepted action, or throws a HookError. */
export type Route = (envelope: Envelope) => Accepted | Promise<Accepted>;

const validateWake = compileValidator<WakePayload>(wakePayloadSchema);
const validateAgent = compileValidator<AgentPayload>(agentPayloadSchema);

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

/** Build the route table for a configuration. */
export function createRoutes(ctx: BuildContext): ReadonlyMap<string, Route> {
  return new Map<string, Route>([
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
}

/** Find the route for a hook name; unknown names are 404 unknown_hook. */
export function selectRoute(routes: ReadonlyMap<string, Route>, hook: string): Route {
  const route = routes.get(hook);
  if (!route) throw new HookError('unknown_hook', `No hook named "${hook.slice(0, 100)}".`);
  return route;
}
