/**
 * The route for mapped hooks (`<hooks_path>/<name>`, spec 4.3): select the
 * owning mapping, render its fields (once per `forEach` element), and build
 * the actions through the same validation, policy and safety wrapper as the
 * built-in triggers. No mapping for the name: 404; none matched: 204.
 */
import type { Action } from '../schemas/action.ts';
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
import type { Envelope } from './envelope.ts';
import { HookError } from './errors.ts';
import { lookupOwn, toEvaluatorData } from './evaluator-data.ts';
import { publicHeaders } from './headers.ts';
import type { CompiledMapping } from './mappings.ts';
import { hookIsMapped, type RuleData, type Selection, selectMapping } from './rules.ts';
import { compileValidator } from './validation.ts';

const validateWake = compileValidator<WakePayload>(wakePayloadSchema);
const validateAgent = compileValidator<AgentPayload>(agentPayloadSchema);

/** The prototype-free view of a request that conditions and templates read. */
export function ruleData(envelope: Envelope): RuleData {
  return {
    payload: toEvaluatorData(envelope.payload),
    headers: publicHeaders(envelope.headers),
    query: envelope.query,
    path: envelope.path,
    hook: envelope.hook,
    method: envelope.method,
  };
}

/** Select the mapping for an envelope (404 when no mapping serves this hook name). */
export function selectFor(
  mappings: readonly CompiledMapping[],
  envelope: Envelope,
): { selection: Selection; data: RuleData } {
  if (!hookIsMapped(mappings, envelope.hook)) {
    throw new HookError('unknown_hook', `No hook named "${envelope.hook.slice(0, 100)}".`);
  }
  const data = ruleData(envelope);
  return { selection: selectMapping(mappings, data), data };
}

/** Build the actions of a selected mapping; throws HookError naming the mapping on bad output. */
export function buildMappedActions(
  mapping: CompiledMapping,
  envelope: Envelope,
  data: RuleData,
  ctx: BuildContext & { maxActions: number },
): Accepted {
  const items = fanOutItems(mapping, data, ctx.maxActions);
  const actions: Action[] = items.map((item, index) => {
    const context = templateContext(
      data,
      envelope.receivedAt,
      mapping.forEach ? { item, index } : {},
    );
    return buildOne(mapping, envelope, context, ctx);
  });
  if (actions.length === 0) return { actions, response: null };
  return { actions, response: acceptanceBody(actions, mapping.forEach !== undefined) };
}

function fanOutItems(mapping: CompiledMapping, data: RuleData, maxActions: number): unknown[] {
  if (mapping.forEach === undefined) return [undefined];
  const items = lookupOwn(data.payload, mapping.forEach);
  if (!Array.isArray(items)) {
    throw refusal(
      mapping,
      'invalid_payload',
      `payload.${mapping.forEach} must be an array (forEach)`,
    );
  }
  if (items.length > maxActions) {
    throw refusal(
      mapping,
      'invalid_payload',
      `payload.${mapping.forEach} has ${items.length} elements; at most ${maxActions} (hooks.maxActionsPerRequest)`,
    );
  }
  return items;
}

/** Template context: payload fields bare, then the named parts (which win over bare fields). */
function templateContext(
  data: RuleData,
  receivedAt: string,
  extra: { item?: unknown; index?: number },
): unknown {
  const context: Record<string, unknown> = Object.create(null);
  const payload = data.payload;
  if (payload !== null && typeof payload === 'object' && !Array.isArray(payload))
    Object.assign(context, payload);
  Object.assign(context, {
    payload,
    headers: data.headers,
    query: data.query,
    path: data.path,
    hook: data.hook,
    method: data.method,
    now: receivedAt,
    ...extra,
  });
  return context;
}

function buildOne(
  mapping: CompiledMapping,
  envelope: Envelope,
  context: unknown,
  ctx: BuildContext,
): Action {
  const rendered: Record<string, unknown> = {};
  for (const [field, plan] of Object.entries(mapping.fields)) {
    rendered[field] = typeof plan === 'string' ? plan : plan(context);
  }
  const key = mapping.sessionKey;
  if (key !== undefined) {
    rendered['sessionKey'] =
      'static' in key ? key.static : renderKey(mapping, key.template, context);
  }
  try {
    if (mapping.kind === 'wake') {
      const fields: Record<string, unknown> = { text: rendered['text'] ?? rendered['message'] };
      const mode = rendered['mode'] ?? rendered['wakeMode'];
      if (mode !== undefined) fields['mode'] = mode;
      return buildWakeAction(
        envelope,
        valid(mapping, validateWake, fields),
        ctx,
        mapping.provenance,
      );
    }
    const fields: Record<string, unknown> = {
      message: rendered['message'] ?? rendered['text'],
      ...pick(rendered, [
        'name',
        'sessionKey',
        'agentId',
        'channel',
        'to',
        'model',
        'thinking',
        'wakeMode',
      ]),
      ...(mapping.deliver !== undefined && { deliver: mapping.deliver }),
      ...(mapping.timeoutSeconds !== undefined && { timeoutSeconds: mapping.timeoutSeconds }),
    };
    if (fields.wakeMode === undefined && rendered['mode'] !== undefined)
      fields.wakeMode = rendered['mode'];
    return buildAgentAction(
      envelope,
      valid(mapping, validateAgent, fields),
      ctx,
      mapping.provenance,
    );
  } catch (err) {
    if (err instanceof HookError && err.status === 400)
      throw refusal(mapping, err.code, err.message);
    throw err;
  }
}

function renderKey(
  mapping: CompiledMapping,
  template: { render(context: unknown): string },
  context: unknown,
): string {
  try {
    return template.render(context);
  } catch (err) {
    if (err instanceof HookError) throw refusal(mapping, err.code, err.message);
    throw err;
  }
}

function pick(source: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

function valid<T>(
  mapping: CompiledMapping,
  check: (value: unknown) => { ok: true; value: T } | { ok: false; field: string; message: string },
  fields: unknown,
): T {
  const result = check(fields);
  if (result.ok) return result.value;
  const empty = ['is required', 'must not be empty', 'must not be blank'].includes(result.message);
  const what = empty ? 'rendered empty' : result.message;
  throw refusal(mapping, 'invalid_payload', `${result.field}: ${what}`);
}

function refusal(mapping: CompiledMapping, code: HookError['code'], message: string): HookError {
  const text = message.startsWith('Mapping "') ? message : `Mapping "${mapping.id}": ${message}`;
  return new HookError(code, text);
}
