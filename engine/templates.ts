/**
 * Handlebars templates for mapped hooks: compiled once at boot from config
 * strings (never from request data), in a private Handlebars environment
 * with prototype access off, no HTML escaping (these are prompts, not pages)
 * and a small set of total helpers. Rendering never throws.
 */
import Handlebars from 'handlebars';

/** A compiled template: renders a context to a string, '' when rendering fails. */
export type Template = (context: unknown) => string;

const hb = Handlebars.create();
hb.unregisterHelper('log');

function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return Array.isArray(value) ? value.map(text).join(', ') : '';
  return String(value);
}

// Handlebars passes its options object last: a parameter that is not a plain value is "absent".
function given<T>(value: unknown, type: 'string' | 'number'): T | undefined {
  return typeof value === type ? (value as T) : undefined;
}

const HELPERS: Record<string, (...args: unknown[]) => unknown> = {
  json: (value) => {
    try {
      return JSON.stringify(value ?? null) ?? 'null';
    } catch {
      return 'null';
    }
  },
  default: (value, fallback) =>
    value === undefined || value === null || value === ''
      ? text(given(fallback, 'string') ?? fallback)
      : value,
  truncate: (value, length) => {
    const limit = given<number>(length, 'number') ?? 200;
    const s = text(value);
    return s.length > limit ? `${s.slice(0, Math.max(0, limit - 1))}…` : s;
  },
  lower: (value) => text(value).toLowerCase(),
  upper: (value) => text(value).toUpperCase(),
  join: (value, separator) =>
    Array.isArray(value) ? value.map(text).join(given(separator, 'string') ?? ', ') : text(value),
  eq: (a, b) => a === b,
};
for (const [name, helper] of Object.entries(HELPERS)) hb.registerHelper(name, helper);

const COMPILE_OPTIONS = {
  noEscape: true,
  strict: false,
  knownHelpersOnly: true,
  // `log` is a Handlebars built-in that writes to the console: unregistered and unknown here.
  knownHelpers: {
    ...Object.fromEntries(Object.keys(HELPERS).map((name) => [name, true])),
    log: false,
  },
} as const;

const RUNTIME_OPTIONS = {
  // Explicitly off (the default since 4.6): no inherited properties or methods.
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
} as const;

/** Names of the registered helpers, for documentation and `check`. */
export const HELPER_NAMES = Object.freeze(Object.keys(HELPERS));

/** Compile a template from a config string; throws with Handlebars' message on a syntax error. */
export function compileTemplate(source: string): Template {
  // precompile is eager: syntax errors and unknown helpers surface now, at boot.
  hb.precompile(source, COMPILE_OPTIONS);
  const render = hb.compile(source, COMPILE_OPTIONS);
  return function renderTemplate(context) {
    try {
      return render(context, RUNTIME_OPTIONS);
    } catch {
      return '';
    }
  };
}

/** Parse a template into Handlebars' AST (for session-key templates that need its parts). */
export function parseTemplate(source: string): hbs.AST.Program {
  return hb.parse(source);
}
