/**
 * Rendering a matched mapping's fields: the template context, each field
 * rendered within the request's render budget, and the sizes of what was
 * rendered (or what a transform returned) checked against the bounds. Over a
 * bound: 400 rendered_too_large naming the mapping and the field.
 */
import { HookError } from './errors.ts';
import type { CompiledMapping } from './mappings.ts';
import {
  LIMIT_SETTINGS,
  type RenderBudget,
  RenderLimitError,
  WORK_FACTOR,
} from './render-budget.ts';
import type { RuleData } from './rules.ts';
import type { SessionKeyTemplate } from './session-key-template.ts';

/** Template context: payload fields bare, then the named parts (which win over bare fields). */
export function templateContext(
  data: RuleData,
  receivedAt: string,
  extra: { item?: unknown; index?: number },
): Record<string, unknown> {
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

/** The mapping's fields for this context, in the shape of its action kind's payload. */
export function renderFields(
  mapping: CompiledMapping,
  context: unknown,
  budget: RenderBudget,
): Record<string, unknown> {
  const rendered: Record<string, unknown> = {};
  budget.startAction();
  for (const [field, plan] of Object.entries(mapping.fields)) {
    const value = renderField(mapping, field, budget, (b) =>
      typeof plan === 'string' ? plan : plan(context, b),
    );
    // An optional field whose template renders nothing is absent (defaults apply); an empty
    // message or text stays, and is refused by validation.
    if (value === '' && field !== 'message' && field !== 'text') continue;
    rendered[field] = value;
  }
  const key = mapping.sessionKey;
  if (key !== undefined) {
    const value =
      'static' in key
        ? key.static
        : renderField(mapping, 'sessionKey', budget, (b) => renderKey(mapping, key, context, b));
    // An empty value with whenEmpty `default`: no key, so the run gets a key-less run's session.
    if (value !== undefined) rendered['sessionKey'] = value;
  }
  if (mapping.kind === 'wake') {
    const text = rendered['text'] ?? rendered['message'];
    const mode = rendered['mode'] ?? rendered['wakeMode'];
    return { ...(text !== undefined && { text }), ...(mode !== undefined && { mode }) };
  }
  const message = rendered['message'] ?? rendered['text'];
  const wakeMode = rendered['wakeMode'] ?? rendered['mode'];
  return {
    ...(message !== undefined && { message }),
    ...pick(rendered, ['name', 'sessionKey', 'agentId', 'channel', 'to', 'model', 'thinking']),
    ...(wakeMode !== undefined && { wakeMode }),
    ...(mapping.deliver !== undefined && { deliver: mapping.deliver }),
    ...(mapping.timeoutSeconds !== undefined && { timeoutSeconds: mapping.timeoutSeconds }),
  };
}

/** Render one field within the budget; over a bound: 400 rendered_too_large naming the field. */
function renderField<T extends string | undefined>(
  mapping: CompiledMapping,
  field: string,
  budget: RenderBudget,
  render: (budget: RenderBudget) => T,
): T {
  try {
    budget.startField();
    const value = render(budget);
    if (value !== undefined) budget.account(Buffer.byteLength(value));
    return value;
  } catch (err) {
    if (err instanceof RenderLimitError) throw tooLarge(mapping, field, err);
    throw err;
  }
}

/** Account the string fields of an action built outside templates (a transform's output). */
export function accountAction(
  mapping: CompiledMapping,
  fields: Record<string, unknown>,
  budget: RenderBudget,
): void {
  budget.startAction();
  for (const [field, value] of Object.entries(fields)) {
    if (typeof value !== 'string') continue;
    try {
      budget.account(Buffer.byteLength(value));
    } catch (err) {
      if (err instanceof RenderLimitError) throw tooLarge(mapping, field, err);
      throw err;
    }
  }
}

/** A bound a mapping's template hit, as 400 rendered_too_large naming the mapping and the field. */
export function tooLarge(
  mapping: Pick<CompiledMapping, 'id'>,
  field: string,
  err: RenderLimitError,
): HookError {
  const setting = LIMIT_SETTINGS[err.limit];
  const what =
    err.limit === 'work'
      ? `needs more rendering work than ${err.max} (${WORK_FACTOR} × ${setting})`
      : err.limit === 'field'
        ? `renders more than ${err.max} bytes (${setting})`
        : `takes the ${err.limit}'s rendered size over ${err.max} bytes (${setting})`;
  return new HookError('rendered_too_large', `Mapping "${mapping.id}": ${field} ${what}`, {
    details: { mappingId: mapping.id, field, limit: err.limit, max: err.max, setting },
  });
}

function renderKey(
  mapping: CompiledMapping,
  { template, whenEmpty }: { template: SessionKeyTemplate; whenEmpty: 'refuse' | 'default' },
  context: unknown,
  budget: RenderBudget,
): string | undefined {
  try {
    return whenEmpty === 'default'
      ? template.renderUnlessEmpty(context, budget)
      : template.render(context, budget);
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

export function refusal(
  mapping: CompiledMapping,
  code: HookError['code'],
  message: string,
): HookError {
  const text = message.startsWith('Mapping "') ? message : `Mapping "${mapping.id}": ${message}`;
  return new HookError(code, text);
}
