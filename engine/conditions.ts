/**
 * Match conditions: JSON-logic rules over the request envelope, validated
 * and compiled at boot. Only known operators, bounded depth, and no path
 * through `__proto__`, `constructor` or `prototype`; `var` looks up own
 * properties only (json-logic-js's own follows the prototype chain), and
 * `missing`, `missing_some` read their keys as paths, never as rules.
 * A bad lookup is "no match"; evaluation never crashes.
 *
 * Work is linear in the data: `map`, `filter`, `all`, `some` and `none` see
 * one element at a time, so only `reduce` can carry data from one step to the
 * next. Its reducer is limited at boot to arithmetic and comparisons over
 * literal `var` paths: the accumulator is then a number or a boolean after
 * the first step and can neither grow (`cat`, `merge`) nor be kept large and
 * re-read every step (`if`, `or`, a computed `var` fallback). Every data
 * lookup is also counted: an evaluation past MAX_LOOKUPS stops with
 * ConditionBudgetExceeded, so a wide payload under nested `some`/`all` cannot
 * hold the loop. That one is not "no match": turning a true condition false
 * would let a sender steer its request past a mapping to the next one, so the
 * caller refuses the request instead. So is a value JavaScript cannot compare
 * or turn into text (ConditionUnreadable).
 */
import jsonLogic from 'json-logic-js';
import { FORBIDDEN_SEGMENTS, lookupOwn } from './evaluator-data.ts';
import { containsText } from './substring-search.ts';
import { joinPath } from './validation.ts';

/** A compiled condition: true when the rule holds for the data. */
export type Condition = (data: unknown) => boolean;

/** Deepest rule nesting accepted at boot. */
export const MAX_RULE_DEPTH = 32;

/** Most data lookups (`var`, `missing`) one evaluation of a condition may make. */
export const MAX_LOOKUPS = 10_000;

// Lookups made by the evaluation in progress (evaluation is synchronous, never re-entrant).
let lookups = 0;

/** Thrown when an evaluation runs out of lookups: the request is refused, never "no match". */
export class ConditionBudgetExceeded extends Error {
  constructor() {
    super(`the condition needed more than ${MAX_LOOKUPS} lookups`);
    this.name = 'ConditionBudgetExceeded';
  }
}

/**
 * Thrown when the rule could not be evaluated over the data: an object with its own `toString`
 * key (`{"toString": 1}`) cannot be converted for `==`, `<`, `cat`, `in`, `+`...
 * As "no match" it let a sender turn a condition that holds for any other value
 * (`{"!=": [{"var": "payload.repo"}, "ours"]}` before an `ignore` mapping) false, and its
 * request went on to the next mapping: the request is refused, never "no match".
 */
export class ConditionUnreadable extends Error {
  constructor(cause: unknown) {
    super('the condition could not be evaluated over the request', { cause });
    this.name = 'ConditionUnreadable';
  }
}

// Operators an operator may use; `log` (console) and anything added later are refused.
const KNOWN_OPERATORS: ReadonlySet<string> = new Set([
  '==',
  '===',
  '!=',
  '!==',
  '>',
  '>=',
  '<',
  '<=',
  '!',
  '!!',
  'and',
  'or',
  'if',
  '?:',
  'in',
  'cat',
  'substr',
  '+',
  '-',
  '*',
  '/',
  '%',
  'min',
  'max',
  'merge',
  'var',
  'missing',
  'missing_some',
  'some',
  'all',
  'none',
  'filter',
  'map',
  'reduce',
]);

/** A `var` lookup: own properties only, counted against the evaluation's budget. */
function readVar(data: unknown, path?: unknown, fallback?: unknown): unknown {
  if (++lookups > MAX_LOOKUPS) throw new ConditionBudgetExceeded();
  const notFound = fallback === undefined ? null : fallback;
  if (path === undefined || path === null || path === '') return data;
  const found = lookupOwn(data, String(path));
  return found === undefined ? notFound : found;
}

// Own-property `var`, replacing json-logic-js's prototype-walking one.
jsonLogic.add_operation('var', function ownVar(this: unknown, path?: unknown, fallback?: unknown) {
  return readVar(this, path, fallback);
});

/**
 * The keys of `keys` whose value is absent, null or ''. json-logic-js's own `missing` and
 * `missing_some` run each key through `apply` as a rule: a key taken from the payload
 * (`{"missing": {"var": "payload.fields"}}`) was then evaluated as JSON-logic, with every
 * operator (`log`, a `reduce` that doubles its accumulator) and none of the checks at boot.
 * Here a key is only ever a path.
 */
function missingKeys(data: unknown, keys: readonly unknown[]): unknown[] {
  const missing: unknown[] = [];
  for (const key of keys) {
    const value = readVar(data, key);
    if (value === null || value === '') missing.push(key);
  }
  return missing;
}

jsonLogic.add_operation('missing', function ownMissing(this: unknown, ...args: unknown[]) {
  // One argument that is an array (what another operator computed) is the list of keys.
  return missingKeys(this, Array.isArray(args[0]) ? args[0] : args);
});

jsonLogic.add_operation(
  'missing_some',
  function ownMissingSome(this: unknown, needed: unknown, options: unknown) {
    const keys = Array.isArray(options) ? options : [];
    const missing = missingKeys(this, keys);
    return keys.length - missing.length >= Number(needed) ? [] : missing;
  },
);

// `in` over a string searches in linear time (V8's own search is quadratic on some inputs).
// As json-logic-js's own: an empty or missing haystack contains nothing.
jsonLogic.add_operation('in', (needle: unknown, haystack: unknown) => {
  if (typeof haystack === 'string')
    return haystack !== '' && containsText(haystack, String(needle));
  const list = haystack as { indexOf?: unknown } | null | undefined;
  if (!list || typeof list.indexOf !== 'function') return false;
  return (list.indexOf as (item: unknown) => number).call(list, needle) !== -1;
});

// Operators a `reduce` reducer may use: each returns a number or a boolean, never an operand.
const REDUCER_OPERATORS: ReadonlySet<string> = new Set([
  'var',
  '==',
  '===',
  '!=',
  '!==',
  '>',
  '>=',
  '<',
  '<=',
  '!',
  '!!',
  '+',
  '-',
  '*',
  '/',
  '%',
  'min',
  'max',
]);

/** A rule that failed validation, with a dotted path inside the rule. */
export class RuleError extends Error {
  readonly at: string;
  constructor(at: string, message: string) {
    super(message);
    this.name = 'RuleError';
    this.at = at;
  }
}

/**
 * Validate a JSON-logic rule and compile it into a predicate. It throws only past the lookup
 * budget (ConditionBudgetExceeded) or over a value it cannot read (ConditionUnreadable).
 */
export function compileCondition(rule: unknown): Condition {
  validateRule(rule, '', 0);
  return function condition(data) {
    lookups = 0;
    try {
      return jsonLogic.truthy(jsonLogic.apply(rule as jsonLogic.RulesLogic, data));
    } catch (err) {
      if (err instanceof ConditionBudgetExceeded) throw err;
      // Only data a sender made unconvertible is refused. Another failure (a prototype-free
      // query or form object compared with text, an operator's slip) stays "no match", as the
      // data holds nothing a sender chose to make it fail.
      if (holdsConversionKey(data)) throw new ConditionUnreadable(err);
      return false;
    }
  };
}

function validateRule(rule: unknown, at: string, depth: number): void {
  if (depth > MAX_RULE_DEPTH)
    throw new RuleError(at, `nested deeper than ${MAX_RULE_DEPTH} levels`);
  if (Array.isArray(rule)) {
    for (const [i, item] of rule.entries()) validateRule(item, joinPath(at, String(i)), depth + 1);
    return;
  }
  if (rule === null || typeof rule !== 'object') return;
  const keys = Object.keys(rule);
  if (keys.length !== 1)
    throw new RuleError(at, 'a rule object must have exactly one operator key');
  const op = keys[0] as string;
  if (!KNOWN_OPERATORS.has(op)) throw new RuleError(at, `unknown operator "${op}"`);
  const args = (rule as Record<string, unknown>)[op];
  if (op === 'var' || op === 'missing' || op === 'missing_some')
    checkPaths(op, args, joinPath(at, op));
  if (op === 'reduce' && Array.isArray(args)) checkReducer(args[1], joinPath(at, 'reduce.1'));
  validateRule(args, joinPath(at, op), depth + 1);
}

/**
 * A reducer may only compute numbers and booleans from literal `var` paths (see the module note).
 * No array anywhere a value goes: json-logic evaluates one to an array of its items' values, so
 * a reducer holding `{var: 'accumulator'}` in one nested the accumulator a level deeper each
 * step, and a comparison turned the whole of it into text every step (2,500 items of a 5 KB
 * body held the event loop for four seconds).
 */
function checkReducer(rule: unknown, at: string): void {
  if (Array.isArray(rule)) {
    throw new RuleError(
      at,
      'a reduce reducer holds no array value (it would grow the accumulator at every step)',
    );
  }
  if (rule === null || typeof rule !== 'object') return;
  const op = Object.keys(rule)[0] as string;
  const args = (rule as Record<string, unknown>)[op];
  if (!REDUCER_OPERATORS.has(op)) {
    throw new RuleError(
      at,
      `"${op}" is not allowed in a reduce reducer (only arithmetic, comparisons and var)`,
    );
  }
  if (op === 'var') {
    const list = Array.isArray(args) ? args : [args];
    if (list.some((arg) => arg !== null && typeof arg === 'object'))
      throw new RuleError(at, 'a var inside a reduce reducer takes a literal path and fallback');
    return;
  }
  // An operator's arguments: a list of values, or one value.
  const list = Array.isArray(args) ? args : [args];
  for (const [i, arg] of list.entries())
    checkReducer(
      arg,
      Array.isArray(args) ? joinPath(joinPath(at, op), String(i)) : joinPath(at, op),
    );
}

/** Refuse literal paths through forbidden segments (dynamic paths are guarded at lookup). */
function checkPaths(op: string, args: unknown, at: string): void {
  const list = Array.isArray(args) ? args : [args];
  const paths: unknown[] =
    op === 'var'
      ? [list[0]]
      : op === 'missing_some'
        ? Array.isArray(list[1])
          ? list[1]
          : []
        : list;
  for (const path of paths) {
    if (typeof path !== 'string' && typeof path !== 'number') continue;
    for (const segment of String(path).split('.')) {
      if (FORBIDDEN_SEGMENTS.has(segment))
        throw new RuleError(at, `path "${path}" goes through "${segment}"`);
    }
  }
}

// What the walk below found, by the request's data: a sender who makes every mapping's condition
// fail (an `in` over a number) costs one walk of the body per request, not one per mapping.
const walked = new WeakMap<object, boolean>();

/**
 * Whether the data holds an object with its own `toString` key, which JavaScript cannot turn into
 * text or a number (its own `valueOf` alone still converts, by the inherited toString). Walked
 * only after an evaluation failed, once per data.
 */
function holdsConversionKey(data: unknown): boolean {
  if (data === null || typeof data !== 'object') return false;
  let found = walked.get(data);
  if (found === undefined) {
    found = walkForConversionKey(data);
    walked.set(data, found);
  }
  return found;
}

// A loop, not recursion: a deeply nested body cannot overflow the stack.
function walkForConversionKey(data: object): boolean {
  const pending: unknown[] = [data];
  while (pending.length > 0) {
    const value = pending.pop();
    if (value === null || typeof value !== 'object') continue;
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item);
      continue;
    }
    if (Object.hasOwn(value, 'toString')) return true;
    for (const key in value)
      if (Object.hasOwn(value, key)) pending.push((value as Record<string, unknown>)[key]);
  }
  return false;
}
