/**
 * Templated session keys of mappings, confined to the mapping's namespace:
 * the literal text before the first `{{` is fixed by the operator (non-empty,
 * ending in `:`), and every interpolated value may only use letters, digits
 * and `._@+-`. A sender can so choose at most a suffix inside the namespace,
 * which is why such keys need no hooks.allowRequestSessionKey.
 */
import { HookError } from './errors.ts';
import type { RenderBudget } from './render-budget.ts';
import { compileTemplate, parseTemplate, type Template } from './templates.ts';

/** Characters an interpolated session-key value may contain. */
export const SAFE_KEY_VALUE = /^[A-Za-z0-9._@+-]+$/;

export type SessionKeyTemplate = {
  /** The fixed namespace, e.g. `hook:gmail:`. */
  prefix: string;
  /** Render for a context; throws 400 invalid_session_key for an empty or unsafe value. */
  render(context: unknown, budget?: RenderBudget): string;
  /** The same, but undefined where a value is empty (no key); unsafe values still throw. */
  renderUnlessEmpty(context: unknown, budget?: RenderBudget): string | undefined;
};

type Part = string | Template;

/** True when the string contains Handlebars syntax. */
export function isTemplated(source: string): boolean {
  return source.includes('{{');
}

/** Compile a session-key template; throws an Error explaining what is not allowed. */
export function compileSessionKeyTemplate(source: string): SessionKeyTemplate {
  const program = parseTemplate(source);
  const lineStarts = [0];
  for (let i = 0; i < source.length; i++) if (source[i] === '\n') lineStarts.push(i + 1);
  const offset = (pos: { line: number; column: number }) =>
    (lineStarts[pos.line - 1] ?? 0) + pos.column;

  const parts: Part[] = [];
  for (const node of program.body) {
    if (node.type === 'ContentStatement') parts.push((node as hbs.AST.ContentStatement).value);
    else if (node.type === 'MustacheStatement') {
      parts.push(compileTemplate(source.slice(offset(node.loc.start), offset(node.loc.end))));
    } else if (node.type !== 'CommentStatement') {
      throw new Error('a sessionKey template may only interpolate values ({{...}}), not blocks');
    }
  }
  const firstTemplate = parts.findIndex((part) => typeof part !== 'string');
  const prefix = parts.slice(0, firstTemplate < 0 ? parts.length : firstTemplate).join('');
  if (prefix === '' || !prefix.endsWith(':')) {
    throw new Error(
      'the text before the first {{ must be a fixed namespace ending in ":" (e.g. "hook:github:")',
    );
  }
  // The key, or undefined when a value is empty and `emptyIsNone`; every value is checked first.
  function render(context: unknown, budget: RenderBudget | undefined, emptyIsNone: boolean) {
    let key = '';
    let empty = false;
    for (const part of parts) {
      const value = typeof part === 'string' ? part : checkedValue(part(context, budget));
      if (value === '' && typeof part !== 'string') {
        if (!emptyIsNone) throw new HookError('invalid_session_key', EMPTY_VALUE);
        empty = true;
      }
      key += value;
    }
    return empty ? undefined : key;
  }
  return {
    prefix,
    render: (context, budget) => render(context, budget, false) ?? '',
    renderUnlessEmpty: (context, budget) => render(context, budget, true),
  };
}

const EMPTY_VALUE = 'sessionKey: an interpolated value is empty.';

/** An interpolated value: empty (the caller decides), or of the safe characters only. */
function checkedValue(value: string): string {
  if (value !== '' && !SAFE_KEY_VALUE.test(value)) {
    throw new HookError(
      'invalid_session_key',
      'sessionKey: interpolated values may only contain letters, digits and ._@+- (keySegment turns any text into such a value)',
    );
  }
  return value;
}
