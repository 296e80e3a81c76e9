/**
 * Policy: which agent, session key, model and channel a hook may use (spec
 * 2.2, 2.3, 4.2). Pure functions of a Policy (derived once from the config)
 * and the requested values; a refusal is thrown as a HookError whose message
 * names the setting that would allow the request.
 */
import type { ChannelId, Config } from '../schemas/config.ts';
import type { SessionKeySource } from '../schemas/action.ts';
import type { ChannelAdapter } from './delivery/adapter.ts';
import type { RecipientAllowed } from './delivery/deliver.ts';
import { recipientFormProblem } from './delivery/recipient-form.ts';
import { createAdapters } from './delivery/registry.ts';
import { HookError } from './errors.ts';
import { isModelRef } from './model-ref.ts';
import { isWellFormedSessionKey, keyHasAllowedPrefix } from './session-key.ts';

/** The policy-relevant part of the configuration, precomputed at boot. */
export type Policy = {
  agentIds: ReadonlySet<string>;
  defaultAgentId: string;
  /** undefined = any agent; contains '*' = any agent; empty = explicit routing denied. */
  allowedAgentIds: readonly string[] | undefined;
  allowRequestSessionKey: boolean;
  allowedSessionKeyPrefixes: readonly string[] | undefined;
  defaultSessionKey: string | undefined;
  /** null = any `<provider>/<model>` is allowed. */
  allowedModels: ReadonlySet<string> | null;
  modelAliases: ReadonlyMap<string, string>;
  channels: ReadonlySet<string>;
  /** Recipient checks of the configured channels (why a `to` is invalid, or null). */
  recipientChecks: ReadonlyMap<string, (to: string) => string | null>;
  /**
   * hooks.allowedRecipients: undefined = any recipient. Else, per channel, whether a
   * (well-formed) `to` is one of its entries; a channel without an entry allows none.
   */
  allowedRecipients: ReadonlyMap<string, (to: string) => boolean> | undefined;
};

/** Whether `to` is in `entries` ('*' for any), read as the channel's adapter reads recipients. */
function recipientAllowlist(
  entries: readonly string[],
  adapter: ChannelAdapter | undefined,
): (to: string) => boolean {
  if (entries.includes('*')) return () => true;
  const normalise = (to: string) => adapter?.normaliseRecipient?.(to) ?? to;
  const allowed = new Set(entries.map(normalise));
  return (to) => {
    const recipient = normalise(to);
    if (allowed.has(recipient)) return true;
    // An entry for a conversation covers its parts (a Slack channel's threads).
    const conversation = adapter?.conversationOf?.(recipient);
    return conversation !== undefined && allowed.has(normalise(conversation));
  };
}

/** Derive the policy from a validated config (and the channel adapters, built from it by default). */
export function policyFromConfig(
  config: Config,
  adapters: ReadonlyMap<string, ChannelAdapter> = createAdapters(config.channels),
): Policy {
  const list = config.agents.list;
  const defaultAgentId = list.find((a) => a.default === true)?.id ?? list[0]?.id ?? 'main';
  const models = config.agents.defaults.models;
  const aliases = new Map<string, string>();
  for (const [id, entry] of Object.entries(models ?? {}))
    if (entry.alias) aliases.set(entry.alias, id);
  return {
    agentIds: new Set(list.length > 0 ? list.map((a) => a.id) : [defaultAgentId]),
    defaultAgentId,
    allowedAgentIds: config.hooks.allowedAgentIds,
    allowRequestSessionKey: config.hooks.allowRequestSessionKey,
    allowedSessionKeyPrefixes: config.hooks.allowedSessionKeyPrefixes,
    defaultSessionKey: config.hooks.defaultSessionKey,
    allowedModels: models ? new Set(Object.keys(models)) : null,
    modelAliases: aliases,
    channels: new Set(Object.keys(config.channels)),
    recipientChecks: new Map(
      [...adapters].map(([id, adapter]) => [id, (to: string) => adapter.checkRecipient(to)]),
    ),
    allowedRecipients:
      config.hooks.allowedRecipients &&
      new Map(
        Object.entries(config.hooks.allowedRecipients).map(([id, entries]) => [
          id,
          recipientAllowlist(entries, adapters.get(id)),
        ]),
      ),
  };
}

/** Resolve the target agent: unknown ids fall back to the default, then the allowlist applies. */
export function resolveAgentId(policy: Policy, requested: string | undefined): string {
  if (requested === undefined) return policy.defaultAgentId;
  const resolved = policy.agentIds.has(requested) ? requested : policy.defaultAgentId;
  const allowed = policy.allowedAgentIds;
  if (allowed === undefined || allowed.includes('*') || allowed.includes(resolved)) return resolved;
  const message =
    allowed.length === 0
      ? 'Explicit agentId routing is disabled: hooks.allowedAgentIds is empty.'
      : `Agent "${resolved}" is not in hooks.allowedAgentIds.`;
  throw new HookError('agent_not_allowed', message);
}

/** A session key together with where it came from. */
export type ResolvedSessionKey = { sessionKey: string; source: SessionKeySource };

/**
 * Resolve the session key of an agent run (spec 4.2). `requested` comes from
 * the request body (needs hooks.allowRequestSessionKey) or from a mapping's
 * static value (no opt-in); hooks.allowedSessionKeyPrefixes applies to both.
 */
export function resolveSessionKey(
  policy: Policy,
  requested: { key: string; source: 'request' | 'mapping' } | undefined,
  newId: () => string,
): ResolvedSessionKey {
  if (requested === undefined) {
    if (policy.defaultSessionKey !== undefined) {
      return { sessionKey: policy.defaultSessionKey, source: 'default' };
    }
    return { sessionKey: `hook:${newId()}`, source: 'generated' };
  }
  if (requested.source === 'request' && !policy.allowRequestSessionKey) {
    throw new HookError(
      'session_key_not_allowed',
      'Request-supplied sessionKey is disabled; set hooks.allowRequestSessionKey to true to allow it.',
    );
  }
  if (!isWellFormedSessionKey(requested.key)) {
    throw new HookError(
      'invalid_session_key',
      'sessionKey must be 1-256 printable characters without spaces or control characters.',
    );
  }
  const prefixes = policy.allowedSessionKeyPrefixes;
  if (prefixes !== undefined && !keyHasAllowedPrefix(requested.key, prefixes)) {
    throw new HookError(
      'session_key_not_allowed',
      'sessionKey does not start with any of hooks.allowedSessionKeyPrefixes.',
    );
  }
  return { sessionKey: requested.key, source: requested.source };
}

/** Resolve a model override: an alias or `<provider>/<model>`, within agents.defaults.models when set. */
export function resolveModel(policy: Policy, requested: string | undefined): string | undefined {
  if (requested === undefined) return undefined;
  const model = policy.modelAliases.get(requested) ?? requested;
  const wellFormed = isModelRef(model);
  // With a list, anything not on it is refused alike, whatever its form (`gpt-4`, `MINI`).
  if (policy.allowedModels !== null && !(wellFormed && policy.allowedModels.has(model))) {
    throw new HookError(
      'model_not_allowed',
      wellFormed
        ? `Model "${model}" is not in agents.defaults.models.`
        : 'This model is neither an id nor an alias in agents.defaults.models.',
    );
  }
  if (!wellFormed) {
    throw new HookError(
      'invalid_payload',
      'model: must be <provider>/<model> or an alias from agents.defaults.models',
    );
  }
  return model;
}

/** Check a recipient against its channel's form (E.164, chat id, ...): a bad one is refused at the door. */
export function checkRecipient(policy: Policy, channel: string, to: string | undefined): void {
  if (to === undefined) return;
  // With `last` the channel is only known at delivery time: only what every channel refuses.
  const problem =
    channel === 'last' ? recipientFormProblem(to) : policy.recipientChecks.get(channel)?.(to);
  if (problem) throw new HookError('invalid_recipient', `to: ${problem} (channel ${channel})`);
}

/** The allowlist as delivery asks it, once `last` is resolved to a channel (none set: any). */
export function recipientAllowedBy(policy: Policy): RecipientAllowed {
  const allowlist = policy.allowedRecipients;
  if (allowlist === undefined) return () => true;
  return (channel, to) => allowlist.get(channel)?.(to) ?? false;
}

/**
 * Check a request's or a mapping's recipient against hooks.allowedRecipients (after its form).
 * The deployment's own routes (session.defaultRoute, ownerRoutes) are not held to it.
 */
export function checkRecipientAllowed(
  policy: Policy,
  channel: string,
  to: string | undefined,
): void {
  const allowlist = policy.allowedRecipients;
  if (to === undefined || allowlist === undefined) return;
  // `last` with no last route yet: the channel is only known at delivery time, so a `to` that
  // cannot be checked against the allowlist now is refused rather than let through.
  if (channel === 'last') {
    throw new HookError(
      'recipient_not_allowed',
      'to: name the channel too (hooks.allowedRecipients is set and there is no last route yet)',
    );
  }
  if (!allowlist.get(channel)?.(to)) {
    throw new HookError(
      'recipient_not_allowed',
      `to: not in hooks.allowedRecipients.${channel} (channel ${channel})`,
    );
  }
}

/** Check a delivery channel: `last` or one of the configured channels. */
export function resolveChannel(policy: Policy, requested: string | undefined): 'last' | ChannelId {
  if (requested === undefined || requested === 'last') return 'last';
  if (policy.channels.has(requested)) return requested as ChannelId;
  const known = ['last', ...policy.channels].join(', ');
  throw new HookError(
    'invalid_channel',
    `channel: must be one of ${known} (configure it under channels).`,
  );
}
