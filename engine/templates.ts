/**
 * Handlebars templates for mapped hooks: compiled once at boot from config
 * strings (never from request data), in a private Handlebars environment
 * with prototype access off, no HTML escaping (these are prompts, not pages)
 * and a small set of total helpers.
 *
 * Rendering is bounded while it runs (render-budget.ts): every `{{value}}` is
 * routed through one output helper that charges its length, the loop helper
 * `each` checks its output after every iteration, and helpers charge the text
 * they build. Objects and arrays interpolated with `{{value}}` render as
 * compact JSON. Partials and decorators are refused at boot. Rendering throws
 * only RenderLimitError; any other failure renders ''.
 */
import Handlebars from 'handlebars';
import { keySegment } from './key-segment.ts';
import { formatMinorUnits } from './money.ts';
import { RenderBudget, RenderLimitError } from './render-budget.ts';
import { oneLine } from './one-line.ts';
import { headUnits } from './text-cut.ts';

/** A compiled template: renders a context within a budget (a fresh default one when omitted). */
export type Template = (context: unknown, budget?: RenderBudget) => string;

const hb = Handlebars.create();
hb.unregisterHelper('log');

// The budget of the render in progress. Rendering is synchronous and never re-entrant.
let active = new RenderBudget();

// The helper every interpolation goes through (inserted by the AST rewrite below).
const OUTPUT = 'hookgateOutput';

/** How an interpolated value reads: strings as they are, objects and arrays as compact JSON. */
function display(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return toJson(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  return '';
}

function toJson(value: unknown): string {
  try {
    return JSON.stringify(value ?? null) ?? 'null';
  } catch {
    return 'null';
  }
}

/** Text of a helper argument: arrays joined with ", " (bounded), objects as JSON. */
function text(value: unknown): string {
  if (!Array.isArray(value)) return display(value);
  return joinBounded(value, ', ');
}

// Builds the joined text piece by piece, so a long array with a long separator stops at the bound.
function joinBounded(items: readonly unknown[], separator: string): string {
  let out = '';
  for (let i = 0; i < items.length; i++) {
    const piece = (i === 0 ? '' : separator) + text(items[i]);
    out += piece;
    active.grow(out.length, piece.length);
  }
  return out;
}

// Handlebars passes its options object last: a parameter that is not a plain value is "absent".
function given<T>(value: unknown, type: 'string' | 'number'): T | undefined {
  return typeof value === type ? (value as T) : undefined;
}

/** Charge a helper's result as work (its output is charged again if it is interpolated). */
function made(result: string): string {
  active.spend(result.length);
  return result;
}

const HELPERS: Record<string, (...args: unknown[]) => unknown> = {
  json: (value) => made(toJson(value)),
  default: (value, fallback) =>
    value === undefined || value === null || value === ''
      ? made(text(given(fallback, 'string') ?? fallback))
      : value,
  truncate: (value, length) => {
    const limit = given<number>(length, 'number') ?? 200;
    const s = made(text(value));
    return s.length > limit ? `${headUnits(s, Math.max(0, limit - 1))}…` : s;
  },
  lower: (value) => made(made(text(value)).toLowerCase()),
  upper: (value) => made(made(text(value)).toUpperCase()),
  join: (value, separator) =>
    Array.isArray(value)
      ? joinBounded(value, given(separator, 'string') ?? ', ')
      : made(text(value)),
  eq: (a, b) => {
    // Comparing two long strings costs their length: charged, as loops may repeat it.
    if (typeof a === 'string' && typeof b === 'string') active.spend(Math.min(a.length, b.length));
    return a === b;
  },
  keySegment: (value) => made(keySegment(text(value))),
  // Every run of white space (line breaks included) as one space: a summary stays one line.
  oneLine: (value) => made(oneLine(made(text(value)))),
  money: (amount, currency) => made(formatMinorUnits(amount, given(currency, 'string'))),
  // What `default` takes for absent: `{{#if}}` also hides 0 and false, which are values.
  present: (value) => value !== undefined && value !== null && value !== '',
};
for (const [name, helper] of Object.entries(HELPERS)) hb.registerHelper(name, helper);

/**
 * The values each helper needs. Handlebars passes its options object in the place of a missing
 * one, and `{{json}}` rendered that object, the whole input with it: refused at compile.
 */
const HELPER_VALUES: Readonly<Record<string, number>> = {
  json: 1,
  default: 2,
  truncate: 1,
  lower: 1,
  upper: 1,
  join: 1,
  eq: 2,
  keySegment: 1,
  oneLine: 1,
  money: 1,
  present: 1,
};

/**
 * Throws when a helper is called with fewer values than it needs. A block parameter of a
 * helper's name (`{{#each items as |json|}}`) is a value inside its block, not that helper.
 */
function checkHelperValues(program: hbs.AST.Program): void {
  const visitor = new Handlebars.Visitor();
  const blockParams: string[][] = [];
  const check = (
    node: hbs.AST.MustacheStatement | hbs.AST.SubExpression | hbs.AST.BlockStatement,
  ) => {
    const name =
      node.path.type === 'PathExpression' ? (node.path as hbs.AST.PathExpression).original : '';
    if (blockParams.some((names) => names.includes(name))) return;
    const needed = Object.hasOwn(HELPER_VALUES, name) ? (HELPER_VALUES[name] as number) : 0;
    if (node.params.length < needed)
      throw new Error(
        `helper "${name}" needs ${needed} value${needed > 1 ? 's' : ''}, given ${node.params.length}`,
      );
  };
  const base = Handlebars.Visitor.prototype;
  visitor.Program = function (node) {
    blockParams.push(node.blockParams ?? []);
    base.Program.call(this, node);
    blockParams.pop();
  };
  visitor.MustacheStatement = function (node) {
    check(node);
    base.MustacheStatement.call(this, node);
  };
  visitor.SubExpression = function (node) {
    check(node);
    base.SubExpression.call(this, node);
  };
  visitor.BlockStatement = function (node) {
    check(node);
    base.BlockStatement.call(this, node);
  };
  visitor.accept(program);
}

hb.registerHelper(OUTPUT, (value: unknown) => {
  const s = display(value);
  active.output(s.length);
  return s;
});

hb.registerHelper('each', boundedEach);

// The built-in blocks that run their body with another context.
for (const name of ['with', 'blockHelperMissing']) {
  const builtIn = hb.helpers[name] as (...args: unknown[]) => unknown;
  hb.registerHelper(name, function comparableBlock(this: unknown, ...args: unknown[]) {
    // A block over an array is an each: run here, so each element is compared with `this`.
    if (name === 'blockHelperMissing' && Array.isArray(args[0]))
      return boundedEach.call(this, args[0], args[1] as BlockOptions);
    enterContext(this, args[0]);
    return builtIn.apply(this, args);
  });
}

// `lookup` by a key that is neither text nor a number reads nothing: converting it to a
// property name threw for an object with its own `toString` key, and the whole field rendered ''.
const builtInLookup = hb.helpers['lookup'] as (...args: unknown[]) => unknown;
hb.registerHelper('lookup', function textKeyLookup(this: unknown, ...args: unknown[]) {
  const key = args[1];
  return typeof key === 'string' || typeof key === 'number'
    ? builtInLookup.apply(this, args)
    : undefined;
});

type BlockOptions = Handlebars.HelperOptions & { data?: Record<string, unknown> };

/** `each` over arrays and objects, checking the budget after every iteration. */
function boundedEach(this: unknown, context: unknown, options: BlockOptions): string {
  if (!options || typeof options.fn !== 'function') return '';
  if (context === null || typeof context !== 'object') return options.inverse(this);
  const isArray = Array.isArray(context);
  const keys = isArray ? undefined : Object.keys(context);
  const count = keys ? keys.length : (context as unknown[]).length;
  if (count === 0) return options.inverse(this);
  const data = options.data ? hb.createFrame(options.data) : undefined;
  let out = '';
  for (let i = 0; i < count; i++) {
    const key = keys ? (keys[i] as string) : i;
    const value = (context as Record<string | number, unknown>)[key];
    if (data) {
      data['key'] = key;
      data['index'] = i;
      data['first'] = i === 0;
      data['last'] = i === count - 1;
    }
    enterContext(this, value);
    const piece = options.fn(value, { data, blockParams: [value, key] });
    out += piece;
    active.iterate(out.length, piece.length);
  }
  return out;
}

const coerceToNaN = () => Number.NaN;

/**
 * A block's body is about to run with `to` as context inside `from`. Handlebars compares the
 * two with `!=` (to track `../`), and between an object and a plain value that converts: an
 * array to text (a join over everything nested in it), a prototype-free object or one with a
 * payload `toString` key throws (the whole field rendered ''), a long string to a number. Work
 * that grows with the payload, done by every loop around the block: minutes for one body. So
 * both get a constant conversion, and what is left to compare, strings, is charged.
 */
function enterContext(from: unknown, to: unknown): void {
  comparable(from);
  comparable(to);
  if (typeof from === 'string') active.spend(from.length);
  if (typeof to === 'string') active.spend(to.length);
}

/**
 * An object, array or prototype-free, gets a hidden Symbol.toPrimitive giving NaN (unequal to
 * everything, so a new context is always a new `../` level), invisible to paths, keys and JSON.
 */
function comparable(context: unknown): void {
  if (context === null || typeof context !== 'object') return;
  if (Symbol.toPrimitive in context || !Object.isExtensible(context)) return;
  Object.defineProperty(context, Symbol.toPrimitive, { value: coerceToNaN });
}

const KNOWN = [...Object.keys(HELPERS), OUTPUT, 'each'];

const COMPILE_OPTIONS = {
  noEscape: true,
  strict: false,
  knownHelpersOnly: true,
  // `log` is a Handlebars built-in that writes to the console: unregistered and unknown here.
  knownHelpers: { ...Object.fromEntries(KNOWN.map((name) => [name, true])), log: false },
} as const;

const RUNTIME_OPTIONS = {
  // Explicitly off (the default since 4.6): no inherited properties or methods.
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
} as const;

/** Names of the helpers templates may call, for documentation and `check`. */
export const HELPER_NAMES = Object.freeze(Object.keys(HELPERS));

/** Compile a template from a config string; throws with a message on a syntax error or a partial. */
export function compileTemplate(source: string): Template {
  // precompile is eager: syntax errors and unknown helpers surface now, at boot.
  checkHelperValues(hb.parse(source));
  hb.precompile(bounded(source), COMPILE_OPTIONS);
  const render = hb.compile(bounded(source), COMPILE_OPTIONS);
  return function renderTemplate(context, budget) {
    const previous = active;
    active = budget ?? new RenderBudget();
    try {
      return render(context, RUNTIME_OPTIONS);
    } catch (err) {
      if (err instanceof RenderLimitError) throw err;
      return '';
    } finally {
      active = previous;
    }
  };
}

/**
 * A template's compile error as one line. Handlebars' parse errors span four (the position,
 * the template's text near it, a caret, what was expected instead of what came); the first
 * alone said nothing of what was wrong. The text is the operator's template, not a payload.
 */
export function templateErrorText(err: unknown): string {
  const [first = '', near, caret, expected] = String((err as Error)?.message ?? err).split('\n');
  const parse = /^(Parse error on line \d+):$/.exec(first);
  if (!parse || near === undefined || caret === undefined || expected === undefined) return first;
  return `${parse[1]} near ${JSON.stringify(near)}: ${expected}`;
}

/**
 * Every path a template reads, as parts from the root: `headers.x-id` and `@root.headers.x-id`
 * both give ['headers', 'x-id']; other `@` data paths are left out.
 */
export function pathsRead(source: string): string[][] {
  const paths: string[][] = [];
  const visitor = new Handlebars.Visitor();
  visitor.PathExpression = (path: hbs.AST.PathExpression) => {
    const parts = path.parts.map(String);
    if (!path.data) paths.push(parts);
    else if (parts[0] === 'root') paths.push(parts.slice(1));
  };
  visitor.accept(hb.parse(source));
  return paths;
}

/** Parse a template into Handlebars' AST (for session-key templates that need its parts). */
export function parseTemplate(source: string): hbs.AST.Program {
  return hb.parse(source);
}

/** The template's AST with every interpolation routed through the output helper. */
function bounded(source: string): hbs.AST.Program {
  const program = hb.parseWithoutProcessing(source);
  rewrite(program);
  return program;
}

function rewrite(program: hbs.AST.Program | undefined): void {
  if (!program) return;
  for (const node of program.body) {
    switch (node.type) {
      case 'MustacheStatement':
        routeThroughOutput(node as hbs.AST.MustacheStatement);
        break;
      case 'BlockStatement':
        rewrite((node as hbs.AST.BlockStatement).program);
        rewrite((node as hbs.AST.BlockStatement).inverse);
        break;
      case 'PartialStatement':
      case 'PartialBlockStatement':
        throw new Error('partials ({{> name}}) are not available in hookgate templates');
      case 'Decorator':
      case 'DecoratorBlock':
        throw new Error('decorators ({{* name}}) are not available in hookgate templates');
    }
  }
}

/** `{{x}}` becomes `{{hookgateOutput x}}`; `{{helper a b}}` becomes `{{hookgateOutput (helper a b)}}`. */
function routeThroughOutput(node: hbs.AST.MustacheStatement): void {
  const loc = node.loc;
  const call = node.params.length > 0 || node.hash !== undefined || isHelperName(node.path);
  const inner = call
    ? ({
        type: 'SubExpression',
        path: node.path,
        params: node.params,
        hash: node.hash,
        loc,
      } as unknown as hbs.AST.Expression)
    : (node.path as hbs.AST.Expression);
  const path = {
    type: 'PathExpression',
    data: false,
    depth: 0,
    parts: [OUTPUT],
    original: OUTPUT,
    loc,
  };
  Object.assign(node, { path, params: [inner], hash: undefined });
}

function isHelperName(path: hbs.AST.Expression): boolean {
  if (path.type !== 'PathExpression') return false;
  const p = path as hbs.AST.PathExpression;
  return p.parts.length === 1 && !p.data && p.depth === 0 && KNOWN.includes(p.original);
}
