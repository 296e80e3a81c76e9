/**
 * Turning what a transform returned into action fields (the transform
 * contract in the README): null drops the request, undefined or {} keeps the template-built
 * action, an object is merged over it (`kind` switches wake/agent and drops
 * the other kind's fields), an array fans out (capped at maxActions). Anything else is refused as
 * transform_invalid_output naming the field; nothing half-built survives.
 */
import { HookError } from '../errors.ts';
import { clipUnits } from '../text-cut.ts';

export type ActionKind = 'wake' | 'agent';

const WAKE_FIELDS = ['text', 'mode'] as const;
const AGENT_FIELDS = [
  'message',
  'name',
  'agentId',
  'sessionKey',
  'wakeMode',
  'deliver',
  'channel',
  'to',
  'model',
  'thinking',
  'timeoutSeconds',
] as const;
const FIELDS: Readonly<Record<ActionKind, ReadonlySet<string>>> = {
  wake: new Set(WAKE_FIELDS),
  agent: new Set(AGENT_FIELDS),
};
const ALL_FIELDS: ReadonlySet<string> = new Set(['kind', ...WAKE_FIELDS, ...AGENT_FIELDS]);

/** One action's fields after merging, and whether its session key came from the transform. */
export type MergedAction = {
  kind: ActionKind;
  fields: Record<string, unknown>;
  keyFromTransform: boolean;
};

function invalid(message: string): HookError {
  return new HookError('transform_invalid_output', message);
}

/** Merge a transform's result over the template-built fields; null means "drop". */
export function mergeTransformOutput(
  output: unknown,
  base: { kind: ActionKind; fields: Record<string, unknown> },
  maxActions: number,
): MergedAction[] | null {
  if (output === null) return null;
  if (output === undefined)
    return [{ ...base, fields: { ...base.fields }, keyFromTransform: false }];
  if (Array.isArray(output)) {
    // Capped like a mapping's forEach: the first maxActions are kept (the caller reports the cut).
    return output.slice(0, maxActions).map((item, i) => mergeOne(item, base, `[${i}]`));
  }
  return [mergeOne(output, base, '')];
}

function mergeOne(
  item: unknown,
  base: { kind: ActionKind; fields: Record<string, unknown> },
  at: string,
): MergedAction {
  if (item === null || typeof item !== 'object' || Array.isArray(item)) {
    throw invalid(`output${at}: must be an object, an array of objects, null or undefined`);
  }
  const partial = item as Record<string, unknown>;
  for (const key of Object.keys(partial)) {
    if (!ALL_FIELDS.has(key)) throw invalid(`output${at}.${named(key)}: not an action field`);
  }
  const kind = partial['kind'] ?? base.kind;
  if (kind !== 'wake' && kind !== 'agent')
    throw invalid(`output${at}.kind: must be "wake" or "agent"`);
  const allowed = FIELDS[kind];
  // Own keys only, copied one by one: a returned __proto__ never reaches these objects.
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base.fields)) if (allowed.has(key)) fields[key] = value;
  for (const [key, value] of Object.entries(partial)) {
    if (key === 'kind') continue;
    // Fields of the other kind are dropped (the contract: `kind` switches, the rest follows).
    if (allowed.has(key)) fields[key] = value;
  }
  return { kind, fields, keyFromTransform: Object.hasOwn(partial, 'sessionKey') };
}

/** An unknown key as the answer names it: the transform's text (maybe payload text), cut short. */
function named(key: string): string {
  return clipUnits(key, KEY_CHARS);
}

/** Characters of an unknown output key quoted in the answer (output is up to maxOutputBytes). */
const KEY_CHARS = 40;
