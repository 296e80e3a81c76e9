/**
 * Data handed to rule evaluators and templates: request data without
 * `__proto__`, `constructor` or `prototype` keys. Every reader looks up own
 * properties only (lookupOwn, Handlebars with prototype access off), so
 * lookups can only ever reach what the sender sent.
 *
 * The view shares every part of the parsed data that has none of those keys
 * and copies only the objects on the way to one. A deep copy of every object
 * (prototype-free, as this once made) cost a 255 KB body of empty objects
 * 100-500 ms of the event loop, mostly the collector's, and held ~20 MB.
 */

/** Path segments that are never followed, in rules, templates or payloads. */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set([
  '__proto__',
  'constructor',
  'prototype',
]);

/** JSON-like data minus forbidden keys: the same value when it has none, else a copy of what does. */
export function toEvaluatorData(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return cleanArray(value);
  return cleanObject(value as Record<string, unknown>);
}

function cleanArray(items: unknown[]): unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const clean = toEvaluatorData(item);
    if (clean !== item) copy ??= items.slice(0, i);
    copy?.push(clean);
  }
  return copy ?? items;
}

function cleanObject(object: Record<string, unknown>): Record<string, unknown> {
  const proto = Object.getPrototypeOf(object);
  // Only plain data is shared as it is (what JSON.parse and the form parser make).
  let out: Record<string, unknown> | undefined =
    proto === Object.prototype || proto === null ? undefined : {};
  // for-in, not Object.keys: no array per object (a body of 85,000 `{}` made 85,000 of them).
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    const item = object[key];
    if (FORBIDDEN_SEGMENTS.has(key)) {
      out ??= copyBefore(object, key);
      continue;
    }
    const clean = toEvaluatorData(item);
    if (clean !== item) out ??= copyBefore(object, key);
    if (out) out[key] = clean;
  }
  return out ?? object;
}

/**
 * A plain object with the own keys before `stop` (clean so far, so shared as they are).
 * Forbidden keys never reach it, so no assignment can set its prototype.
 */
function copyBefore(object: Record<string, unknown>, stop: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in object) {
    if (key === stop) break;
    if (Object.hasOwn(object, key)) out[key] = object[key];
  }
  return out;
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
