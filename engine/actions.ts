/**
 * The action stage: turn validated wake or agent fields (from a `/wake` or
 * `/agent` payload, or built by a mapping) into a WakeAction or AgentAction,
 * applying the spec's defaults, the policy and the safety wrapper. Both
 * triggers and mappings go through these same two builders.
 */
import type { Action, AgentAction, WakeAction } from '../schemas/action.ts';
import type { AgentPayload, WakePayload } from '../schemas/payloads.ts';
import type { Envelope } from './envelope.ts';
import { HookError } from './errors.ts';
import {
  checkRecipient,
  checkRecipientAllowed,
  type Policy,
  resolveAgentId,
  resolveChannel,
  resolveModel,
  resolveSessionKey,
} from './policy.ts';
import { DEFAULT_LABEL, wrapUntrusted } from './safety.ts';

/** Actions ready for durable acceptance, with the 200 body; `response: null` answers 204. */
export type Accepted = {
  actions: Action[];
  response: Record<string, unknown> | null;
};

/** Ids and limits the builders need besides the policy. */
export type BuildContext = {
  policy: Policy;
  maxTimeoutSeconds: number;
  /** Action ids. */
  newId: () => string;
  /** Generated session keys' ids (unguessable: another caller must not pick the same key). */
  newSessionId: () => string;
  /** The channel of the main session's last route, when the runtime knows one. */
  lastChannel?: () => string | undefined;
};

/** Where the fields came from, for session-key policy and the safety wrapper. */
export type Provenance = {
  /** 'request': a key in a /agent body (needs opt-in); 'mapping': set by a mapping. */
  sessionKeySource: 'request' | 'mapping';
  /** Wrap the text as untrusted (false only with allowUnsafeExternalContent). */
  wrap: boolean;
  /** Source label inside the wrapper, e.g. Webhook, Email. */
  label: string;
  mappingId?: string;
};

/** Provenance of the built-in /wake and /agent triggers. */
export const DIRECT: Provenance = Object.freeze({
  sessionKeySource: 'request',
  wrap: true,
  label: DEFAULT_LABEL,
});

function origin(envelope: Envelope, id: string, provenance: Provenance) {
  return {
    id,
    hook: envelope.hook,
    receivedAt: envelope.receivedAt,
    client: envelope.client,
    requestId: envelope.id,
    untrusted: provenance.wrap,
    verification: envelope.verification,
    ...(provenance.mappingId !== undefined && { mappingId: provenance.mappingId }),
  };
}

/**
 * Wrap a request text unless the hook is trusted. The action keeps the text
 * as sent (what the operator reads) and, as `prompt`, the wrapped text: what
 * the agent is given.
 */
function guardText(content: string, provenance: Provenance) {
  if (!provenance.wrap) return {};
  const wrapped = wrapUntrusted(content, provenance.label);
  const safety = {
    wrapperId: wrapped.id,
    label: provenance.label,
    patterns: wrapped.patterns,
    neutralised: wrapped.neutralised,
  };
  return { prompt: wrapped.text, safety };
}

/** Build a wake action (spec 2.1, 4.1). */
export function buildWakeAction(
  envelope: Envelope,
  fields: WakePayload,
  ctx: BuildContext,
  provenance: Provenance = DIRECT,
): WakeAction {
  const guarded = guardText(fields.text, provenance);
  return {
    kind: 'wake',
    ...origin(envelope, ctx.newId(), provenance),
    ...guarded,
    text: fields.text,
    mode: fields.mode ?? 'now',
  };
}

/** Build an agent action (spec 2.2, 4.2): defaults, then channel, model, agent and session-key policy. */
export function buildAgentAction(
  envelope: Envelope,
  fields: AgentPayload,
  ctx: BuildContext,
  provenance: Provenance = DIRECT,
): AgentAction {
  const { policy } = ctx;
  if (fields.timeoutSeconds !== undefined && fields.timeoutSeconds > ctx.maxTimeoutSeconds) {
    throw new HookError(
      'invalid_payload',
      `timeoutSeconds: must be at most ${ctx.maxTimeoutSeconds} (hooks.maxTimeoutSeconds)`,
    );
  }
  if (
    fields.mode !== undefined &&
    fields.wakeMode !== undefined &&
    fields.mode !== fields.wakeMode
  ) {
    throw new HookError('invalid_payload', 'mode: differs from wakeMode (give one of them)');
  }
  const channel = resolveChannel(policy, fields.channel);
  // With `last`, the recipient is checked against the channel it would go to today.
  const target =
    channel === 'last'
      ? (ctx.lastChannel?.() ?? (provenance.mappingId ? 'whatsapp' : 'last'))
      : channel;
  checkRecipient(policy, target, fields.to);
  checkRecipientAllowed(policy, target, fields.to);
  const model = resolveModel(policy, fields.model);
  const agentId = resolveAgentId(policy, fields.agentId);
  const requested =
    fields.sessionKey === undefined
      ? undefined
      : { key: fields.sessionKey, source: provenance.sessionKeySource };
  const { sessionKey, source } = resolveSessionKey(policy, requested, ctx.newSessionId);
  const guarded = guardText(fields.message, provenance);
  return {
    kind: 'agent',
    ...origin(envelope, ctx.newId(), provenance),
    ...guarded,
    message: fields.message,
    name: fields.name ?? 'Hook',
    agentId,
    sessionKey,
    sessionKeySource: source,
    wakeMode: fields.wakeMode ?? fields.mode ?? 'now',
    deliver: fields.deliver ?? true,
    channel,
    ...(fields.to !== undefined && { to: fields.to }),
    ...(model !== undefined && { model }),
    ...(fields.thinking !== undefined && { thinking: fields.thinking }),
    ...(fields.timeoutSeconds !== undefined && { timeoutSeconds: fields.timeoutSeconds }),
  };
}

/** The 200 body for accepted actions: the /wake and /agent shapes for one action, plural ids for a fan-out. */
export function acceptanceBody(
  actions: readonly Action[],
  fanOut: boolean,
): Record<string, unknown> {
  if (!fanOut && actions.length === 1) {
    const action = actions[0] as Action;
    if (action.kind === 'wake') return { ok: true, id: action.id, mode: action.mode };
    return { ok: true, runId: action.id, agentId: action.agentId, sessionKey: action.sessionKey };
  }
  const wakes = actions.filter((a): a is WakeAction => a.kind === 'wake');
  const runs = actions.filter((a): a is AgentAction => a.kind === 'agent');
  return {
    ok: true,
    ...(wakes.length > 0 && { ids: wakes.map((a) => a.id) }),
    ...(runs.length > 0 && {
      runIds: runs.map((a) => a.id),
      sessionKeys: runs.map((a) => a.sessionKey),
      agentIds: runs.map((a) => a.agentId),
    }),
  };
}
