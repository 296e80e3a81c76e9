/**
 * The action stage for the built-in triggers: turn a validated `/wake` or
 * `/agent` payload into a WakeAction or AgentAction, applying the spec's
 * defaults and the policy, together with the response the caller receives.
 */
import type { AgentAction, WakeAction } from '../schemas/action.ts';
import type { AgentPayload, WakePayload } from '../schemas/payloads.ts';
import type { Envelope } from './envelope.ts';
import { HookError } from './errors.ts';
import {
  type Policy,
  resolveAgentId,
  resolveChannel,
  resolveModel,
  resolveSessionKey,
} from './policy.ts';

/** An action ready for durable acceptance, with the success body it will answer. */
export type Accepted = { action: WakeAction | AgentAction; response: Record<string, unknown> };

/** Ids and limits the builders need besides the policy. */
export type BuildContext = { policy: Policy; maxTimeoutSeconds: number; newId: () => string };

function origin(envelope: Envelope, id: string) {
  return {
    id,
    hook: envelope.hook,
    receivedAt: envelope.receivedAt,
    client: envelope.client,
    requestId: envelope.id,
    untrusted: true,
  };
}

/** Build a wake action (spec 2.1, 4.1). */
export function buildWakeAction(
  envelope: Envelope,
  payload: WakePayload,
  ctx: BuildContext,
): Accepted {
  const id = ctx.newId();
  const mode = payload.mode ?? 'now';
  const action: WakeAction = { kind: 'wake', ...origin(envelope, id), text: payload.text, mode };
  return { action, response: { ok: true, id, mode } };
}

/** Build an agent action (spec 2.2, 4.2): defaults, then channel, model, agent and session-key policy. */
export function buildAgentAction(
  envelope: Envelope,
  payload: AgentPayload,
  ctx: BuildContext,
): Accepted {
  const { policy } = ctx;
  if (payload.timeoutSeconds !== undefined && payload.timeoutSeconds > ctx.maxTimeoutSeconds) {
    throw new HookError(
      'invalid_payload',
      `timeoutSeconds: must be at most ${ctx.maxTimeoutSeconds} (hooks.maxTimeoutSeconds)`,
    );
  }
  const channel = resolveChannel(policy, payload.channel);
  const model = resolveModel(policy, payload.model);
  const agentId = resolveAgentId(policy, payload.agentId);
  const requested =
    payload.sessionKey === undefined
      ? undefined
      : { key: payload.sessionKey, source: 'request' as const };
  const { sessionKey, source } = resolveSessionKey(policy, requested, ctx.newId);
  const runId = ctx.newId();
  const action: AgentAction = {
    kind: 'agent',
    ...origin(envelope, runId),
    message: payload.message,
    name: payload.name ?? 'Hook',
    agentId,
    sessionKey,
    sessionKeySource: source,
    wakeMode: payload.wakeMode ?? 'now',
    deliver: payload.deliver ?? true,
    channel,
    ...(payload.to !== undefined && { to: payload.to }),
    ...(model !== undefined && { model }),
    ...(payload.thinking !== undefined && { thinking: payload.thinking }),
    ...(payload.timeoutSeconds !== undefined && { timeoutSeconds: payload.timeoutSeconds }),
  };
  return { action, response: { ok: true, runId, agentId, sessionKey } };
}
