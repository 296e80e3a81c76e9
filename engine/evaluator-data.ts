/**
 * Data handed to rule evaluators and templates: a deep copy of request data
 * made of prototype-free objects, without `__proto__`, `constructor` or
 * `prototype` keys. Lookups can then only ever reach what the sender sent.
 */

/** Path segments that are never followed, in rules, templates or payloads. */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);

/** A prototype-free deep copy of JSON-like data, minus forbidden keys. */
export function toEvaluatorData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toEvaluatorData);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_SEGMENTS.has(key)) continue;
      out[key] = toEvaluatorData((value as Record<string, unknown>)[key]);
    }
    return out;
  }
  return value;
}

/** Follow a dotted path through own properties only; undefined when any step is missing. */
export function lookupOwn(data: unknown, path: string): unknown {
  if (path === '') return data;
  let current = data;
  for (const segment of path.split('.')) {
    if (FORBIDDEN_SEGMENTS.has(segment)) return undefined;
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, segment))
      return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}
