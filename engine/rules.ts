/**
 * The rule evaluator: which mapping owns a request. Mappings are tried in
 * order (the user's, then presets); the first whose path, source and `when`
 * condition all hold wins. "No match" is a result, not an error; the trace
 * says for each mapping why it did or did not match.
 */
import { ConditionBudgetExceeded, ConditionUnreadable, MAX_LOOKUPS } from './conditions.ts';
import { HookError } from './errors.ts';
import type { CompiledMapping } from './mappings.ts';

/** Why a mapping did not match, or that it did. */
export type MatchOutcome = 'matched' | 'path' | 'source' | 'when' | 'skipped';

export type MatchTrace = { mappingId: string; outcome: MatchOutcome };

export type Selection = { mapping: CompiledMapping | undefined; trace: MatchTrace[] };

/** The data conditions see: the envelope's request parts, prototype-free. */
export type RuleData = {
  payload: unknown;
  headers: Record<string, string>;
  query: Record<string, string>;
  path: string;
  hook: string;
  method: string;
};

/** Try the mappings in order; the first that matches owns the request. */
export function selectMapping(mappings: readonly CompiledMapping[], data: RuleData): Selection {
  const trace: MatchTrace[] = [];
  let selected: CompiledMapping | undefined;
  for (const mapping of mappings) {
    if (selected) {
      trace.push({ mappingId: mapping.id, outcome: 'skipped' });
      continue;
    }
    const outcome = matchOne(mapping, data);
    trace.push({ mappingId: mapping.id, outcome });
    if (outcome === 'matched') selected = mapping;
  }
  return { mapping: selected, trace };
}

function matchOne(mapping: CompiledMapping, data: RuleData): MatchOutcome {
  if (mapping.path !== undefined && mapping.path !== data.hook) return 'path';
  if (mapping.source !== undefined) {
    const payload = data.payload as Record<string, unknown> | null;
    const source =
      payload !== null && typeof payload === 'object' && Object.hasOwn(payload, 'source')
        ? payload['source']
        : undefined;
    if (source !== mapping.source) return 'source';
  }
  if (mapping.when && !whenHolds(mapping, data)) return 'when';
  return 'matched';
}

/**
 * The mapping's condition; a payload too costly for it, or holding a value it cannot read, is
 * refused (400), never passed on.
 */
function whenHolds(mapping: CompiledMapping, data: RuleData): boolean {
  try {
    return (mapping.when as (data: unknown) => boolean)(data);
  } catch (err) {
    if (err instanceof ConditionUnreadable) {
      throw new HookError(
        'invalid_payload',
        `Mapping "${mapping.id}": the payload holds a value its condition cannot compare or read as text (match.when; an object with its own toString key).`,
        { details: { mappingId: mapping.id, field: 'match.when' } },
      );
    }
    if (!(err instanceof ConditionBudgetExceeded)) throw err;
    throw new HookError(
      'invalid_payload',
      `Mapping "${mapping.id}": the payload is too large for its condition (match.when needed more than ${MAX_LOOKUPS} lookups).`,
      { details: { mappingId: mapping.id, field: 'match.when', limit: MAX_LOOKUPS } },
    );
  }
}
