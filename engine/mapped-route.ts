/**
 * The route for mapped hooks (`<hooks_path>/<name>`, spec 4.3): select the
 * owning mapping, render its fields (once per `forEach` element), and build
 * the actions through the same validation, policy and safety wrapper as the
 * built-in triggers. No mapping for the name: 404; none matched: 204.
 */
import type { Action } from '../schemas/action.ts';
import {
  type Accepted,
  acceptanceBody,
  type BuildContext,
  buildAgentAction,
  buildWakeAction,
  type Provenance,
} from './actions.ts';
import { type Envelope, withoutPayload } from './envelope.ts';
import { validateAgent, validateWake } from './payload-validators.ts';
import { HookError } from './errors.ts';
import { lookupOwn, toEvaluatorData } from './evaluator-data.ts';
import { publicHeaders } from './headers.ts';
import { accountAction, refusal, renderFields, templateContext } from './mapped-fields.ts';
import { RenderBudget, type RenderLimits } from './render-budget.ts';
import type { Validator } from './validation.ts';
import type { CompiledMapping } from './mappings.ts';
import type { RuleData } from './rules.ts';
import type { TransformResult, TransformSupervisor } from './sandbox/supervisor.ts';
import { type MergedAction, mergeTransformOutput } from './sandbox/transform-output.ts';

// One view per request: the replay check (an idempotencyKey template) and the accept step share it.
const views = new WeakMap<Envelope, RuleData>();

/** The view of a request that conditions and templates read (evaluator-data.ts), built once. */
export function ruleData(envelope: Envelope): RuleData {
  let data = views.get(envelope);
  if (data) return data;
  // Prototype-free at the top: a bare name in a template never reaches Object.prototype.
  data = Object.assign(Object.create(null) as RuleData, {
    payload: toEvaluatorData(envelope.payload),
    headers: publicHeaders(envelope.headers),
    query: envelope.query,
    path: envelope.path,
    hook: envelope.hook,
    method: envelope.method,
  });
  views.set(envelope, data);
  return data;
}

/** Context the mapped route needs besides the policy: the fan-out cap, render bounds, transforms. */
export type MappedContext = BuildContext & {
  maxActions: number;
  /** Bounds of rendered fields, actions and the request (defaults when omitted). */
  renderLimits?: RenderLimits;
  transforms?: TransformSupervisor;
};

/** Build the actions of a selected mapping; throws HookError naming the mapping on bad output. */
export async function buildMappedActions(
  mapping: CompiledMapping,
  envelope: Envelope,
  data: RuleData,
  ctx: MappedContext,
): Promise<Accepted> {
  const kind = mapping.kind;
  // Acknowledged on purpose (a provider's ping, an event the agent need not see): 200, nothing stored.
  if (kind === 'ignore') return { actions: [], response: { ok: true, ignored: mapping.id } };
  if (mapping.transform) return buildWithTransform(mapping, kind, envelope, data, ctx);
  const items = fanOutItems(mapping, data, ctx.maxActions);
  // One budget for the whole request: all actions of a fan-out share it.
  const budget = new RenderBudget(ctx.renderLimits);
  // Built once: copying a payload with many top-level keys once per element would multiply it.
  const context = templateContext(data, envelope.receivedAt, {});
  const actions: Action[] = items.map((item, index) => {
    // Rendering is synchronous: the one context can carry each element in turn.
    if (mapping.forEach) Object.assign(context, { item, index });
    const fields = renderFields(mapping, context, budget);
    return buildFrom(mapping, envelope, kind, fields, mapping.provenance, ctx, 'invalid_payload');
  });
  if (actions.length === 0) return { actions, response: null };
  const body = acceptanceBody(actions, mapping.forEach !== undefined);
  return { actions, response: { ...body, ...truncation(mapping, data, actions.length) } };
}

/**
 * Run the mapping's sandboxed transform and merge what it returns over the template-built fields.
 * Not async: nothing of the parsed payload or its view may stay alive while the call waits (a
 * waiting call holds only its encoded input), so the wait is in `merged`, which gets neither.
 */
function buildWithTransform(
  mapping: CompiledMapping,
  kind: 'wake' | 'agent',
  envelope: Envelope,
  data: RuleData,
  ctx: MappedContext,
): Promise<Accepted> {
  if (!ctx.transforms || !mapping.transform)
    return Promise.reject(new HookError('transform_failed', 'No transform process.'));
  const base = renderFields(
    mapping,
    templateContext(data, envelope.receivedAt, {}),
    new RenderBudget(ctx.renderLimits),
  );
  const input = {
    payload: envelope.payload,
    headers: data.headers,
    query: data.query,
    path: data.path,
    method: data.method,
    hook: data.hook,
    receivedAt: envelope.receivedAt,
  };
  // The request keeps its raw body while it waits (the journal's copy, a replay's fingerprint).
  const call = ctx.transforms.call(mapping.transform.key, input, envelope.raw.length);
  return merged(call, mapping, kind, withoutPayload(envelope), base, ctx);
}

/** The actions of a transform's answer over the template-built fields `base`. */
async function merged(
  call: Promise<TransformResult>,
  mapping: CompiledMapping,
  kind: 'wake' | 'agent',
  envelope: Envelope,
  base: Record<string, unknown>,
  ctx: MappedContext,
): Promise<Accepted> {
  const { value } = await call;
  let merged: MergedAction[] | null;
  try {
    merged = mergeTransformOutput(value, { kind, fields: base }, ctx.maxActions);
  } catch (err) {
    if (err instanceof HookError) throw refusal(mapping, err.code, err.message);
    throw err;
  }
  if (merged === null || merged.length === 0) return { actions: [], response: null };
  // What the transform returned faces the same bounds as rendered fields.
  const budget = new RenderBudget(ctx.renderLimits);
  for (const { fields } of merged) accountAction(mapping, fields, budget);
  const actions = merged.map(({ kind, fields, keyFromTransform }) => {
    // A key chosen by user code counts as request-supplied (hooks.allowRequestSessionKey).
    const provenance: Provenance = keyFromTransform
      ? { ...mapping.provenance, sessionKeySource: 'request' }
      : mapping.provenance;
    return buildFrom(mapping, envelope, kind, fields, provenance, ctx, 'transform_invalid_output');
  });
  const body = acceptanceBody(actions, Array.isArray(value));
  const total = Array.isArray(value) ? value.length : actions.length;
  const cut = total > actions.length ? { truncated: { total, accepted: actions.length } } : {};
  return { actions, response: { ...body, ...cut } };
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
  // Capped, not refused: a sender cannot split its batch, and a refusal would lose all of it.
  // The answer says how many were taken.
  return items.slice(0, maxActions);
}

/** How a capped fan-out is reported in the 200 body. */
function truncation(
  mapping: CompiledMapping,
  data: RuleData,
  accepted: number,
): Record<string, unknown> {
  if (mapping.forEach === undefined) return {};
  const items = lookupOwn(data.payload, mapping.forEach) as unknown[];
  return items.length > accepted ? { truncated: { total: items.length, accepted } } : {};
}

/** Validate the fields against the payload schema, then build through the shared builders. */
function buildFrom(
  mapping: CompiledMapping,
  envelope: Envelope,
  kind: 'wake' | 'agent',
  fields: Record<string, unknown>,
  provenance: Provenance,
  ctx: BuildContext,
  invalidCode: 'invalid_payload' | 'transform_invalid_output',
): Action {
  try {
    if (kind === 'wake') {
      return buildWakeAction(
        envelope,
        valid(mapping, validateWake, fields, invalidCode),
        ctx,
        provenance,
      );
    }
    return buildAgentAction(
      envelope,
      valid(mapping, validateAgent, fields, invalidCode),
      ctx,
      provenance,
    );
  } catch (err) {
    if (err instanceof HookError && (err.status === 400 || err.code === invalidCode)) {
      // Bad values a transform produced are the transform's fault (500), not the sender's (400).
      const fromTransform = invalidCode === 'transform_invalid_output' && err.status === 400;
      throw refusal(mapping, fromTransform ? invalidCode : err.code, err.message);
    }
    throw err;
  }
}

function valid<T>(
  mapping: CompiledMapping,
  check: Validator<T>,
  fields: unknown,
  code: 'invalid_payload' | 'transform_invalid_output' = 'invalid_payload',
): T {
  const result = check(fields);
  if (result.ok) return result.value;
  // Fields come from templates here: an absent or blank one is a template that rendered empty.
  const what = result.empty ? 'rendered empty' : result.message;
  throw refusal(mapping, code, `${result.field}: ${what}`);
}
