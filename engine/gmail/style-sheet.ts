/**
 * The rules of an HTML mail's <style> blocks that hide elements, for the HTML-mail text
 * (html-text.ts): `.note{display:none}` hides every element of class `note` as its inline style
 * would (inline-style.ts reads the declarations). A browser applies a block wherever it is in
 * the document, so every block is read before the text. Only selectors a reader can match
 * without the document tree are kept: a tag name, classes and an id, as `p`, `.a`, `.a.b`,
 * `td#x`; a selector list is read selector by selector. Rules with combinators, pseudo-classes,
 * attribute selectors or escapes, and rules inside at-rules (`@media` applies only on some
 * screens), are not read. Every step is one linear pass over the markup and the CSS, both
 * untrusted; the rules kept are bounded.
 */
import { readStyle, type StyleEffect, withoutComments } from './inline-style.ts';

/** Hiding rules one message keeps at most (a newsletter has tens). */
export const MAX_SHEET_RULES = 1_000;

/** A kept rule: what it does, and the classes an element needs beyond the one it is found by. */
type SheetRule = { effect: StyleEffect; tag: string; id: string; classes: readonly string[] };

/** The hiding rules of a document, found by one class, id or tag of the element. */
export class StyleSheet {
  private readonly byClass = new Map<string, SheetRule[]>();
  private readonly byId = new Map<string, SheetRule[]>();
  private readonly byTag = new Map<string, SheetRule[]>();
  private count = 0;

  /** Whether any rule was kept (the tags' class and id attributes are worth reading). */
  get empty(): boolean {
    return this.count === 0;
  }

  /** Keep a rule for one simple selector; false once the bound is reached. */
  add(selector: Selector, effect: StyleEffect): boolean {
    if (this.count >= MAX_SHEET_RULES) return false;
    const [first, ...rest] = selector.classes;
    const rule = { effect, tag: selector.tag, id: selector.id, classes: rest };
    if (first !== undefined) push(this.byClass, first, rule);
    else if (selector.id !== '') push(this.byId, selector.id, { ...rule, id: '' });
    else push(this.byTag, selector.tag, { ...rule, tag: '' });
    this.count++;
    return true;
  }

  /**
   * What the rules matching an element do to it (merged into `into`, toward hiding), or
   * `into` unchanged; `classes` is its class attribute's value, split as a browser splits it.
   */
  apply(
    tag: string,
    id: string,
    classes: ReadonlySet<string>,
    into: StyleEffect | undefined,
  ): StyleEffect | undefined {
    let effect = into;
    const take = (rules: readonly SheetRule[] | undefined) => {
      for (const rule of rules ?? []) {
        if (rule.tag !== '' && rule.tag !== tag) continue;
        if (rule.id !== '' && rule.id !== id) continue;
        if (!rule.classes.every((name) => classes.has(name))) continue;
        effect = merge(effect, rule.effect);
      }
    };
    take(this.byTag.get(tag));
    if (id !== '') take(this.byId.get(id));
    for (const name of classes) take(this.byClass.get(name));
    return effect;
  }
}

function push(map: Map<string, SheetRule[]>, key: string, rule: SheetRule): void {
  const list = map.get(key);
  if (list) list.push(rule);
  else map.set(key, [rule]);
}

/** A rule's effect merged into an element's, toward hiding (as readStyle merges declarations). */
function merge(into: StyleEffect | undefined, effect: StyleEffect): StyleEffect {
  const out: StyleEffect = { hides: (into?.hides ?? false) || effect.hides };
  const fontSize =
    into?.fontSize === 'zero' || effect.fontSize === 'zero'
      ? 'zero'
      : (into?.fontSize ?? effect.fontSize);
  if (fontSize !== undefined) out.fontSize = fontSize;
  const visibility =
    into?.visibility === 'hidden' || effect.visibility === 'hidden'
      ? 'hidden'
      : (into?.visibility ?? effect.visibility);
  if (visibility !== undefined) out.visibility = visibility;
  return out;
}

/** A simple selector: a tag name (lower-cased, '' for any), an id ('' for any), classes. */
export type Selector = { tag: string; id: string; classes: string[] };

// A tag name, then classes and ids; anything else (combinators, `:`, `[`, `*`, escapes) is not
// a simple selector. Each repetition starts with `.` or `#`, so the match is linear.
const SIMPLE = /^([a-zA-Z][a-zA-Z0-9-]*)?((?:[.#][a-zA-Z0-9_-]+)*)$/;
const PART = /[.#][a-zA-Z0-9_-]+/g;

/** A selector as a simple selector, or undefined when it is not one (or matches nothing). */
export function simpleSelector(text: string): Selector | undefined {
  const match = SIMPLE.exec(text.trim());
  if (!match || (match[1] === undefined && match[2] === '')) return undefined;
  const selector: Selector = { tag: (match[1] ?? '').toLowerCase(), id: '', classes: [] };
  for (const [part] of (match[2] ?? '').matchAll(PART)) {
    if (part.startsWith('.')) selector.classes.push(part.slice(1));
    // Two different ids on one element match nothing.
    else if (selector.id !== '' && selector.id !== part.slice(1)) return undefined;
    else selector.id = part.slice(1);
  }
  return selector;
}

/** Whether an effect changes whether text is seen. */
function changes(effect: StyleEffect): boolean {
  return effect.hides || effect.fontSize === 'zero' || effect.visibility === 'hidden';
}

// A media query that holds on every screen: media types only, no feature in parentheses.
const EVERY_SCREEN = /^@media\s+(?:only\s+)?(?:all|screen)(?:\s*,\s*[a-z]+)*$/i;

/**
 * Read CSS (its comments already cut) into the sheet; false once the sheet is full. A block
 * `@media screen` (or `all`) holds on every screen and is read; any other at-rule's block
 * (`@media (max-width: 600px)`, `@supports`, `@font-face`) holds only somewhere, or not for
 * elements, and is skipped whole.
 */
export function readCss(css: string, sheet: StyleSheet, from = 0, to = css.length): boolean {
  let i = from;
  while (i < to) {
    const open = css.indexOf('{', i);
    if (open < 0 || open >= to) return true;
    const close = Math.min(blockEnd(css, open), to);
    // A statement at-rule before the block (@import ...;) is cut off first (searched within
    // this rule's own text only: a search back through the CSS would be quadratic).
    const head = css.slice(i, open);
    const prelude = head.slice(head.lastIndexOf(';') + 1).trim();
    if (prelude.startsWith('@')) {
      if (EVERY_SCREEN.test(prelude) && !readCss(css, sheet, open + 1, close)) return false;
    } else if (!readRule(prelude, css.slice(open + 1, close), sheet)) return false;
    i = close + 1;
  }
  return true;
}

/** One rule: its declarations, and each simple selector of its list when they hide. */
function readRule(selectors: string, body: string, sheet: StyleSheet): boolean {
  // A nested block (CSS nesting) is not read: only the rule's own declarations before it.
  const nested = body.indexOf('{');
  const effect: StyleEffect = { hides: false };
  readStyle(nested < 0 ? body : body.slice(0, body.lastIndexOf(';', nested) + 1), effect);
  if (!changes(effect)) return true;
  for (const text of selectors.split(',')) {
    const selector = simpleSelector(text);
    if (selector && !sheet.add(selector, effect)) return false;
  }
  return true;
}

/** The index of the `}` that closes the block opened at `open` (or the end of the CSS). */
function blockEnd(css: string, open: number): number {
  let depth = 0;
  for (let i = open; i < css.length; i++) {
    const c = css[i];
    if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return css.length;
}

const STYLE_OPEN = /<style(?=[\s/>])/gi;
const STYLE_CLOSE = /<\/style(?=[\s/>])/gi;

/**
 * The hiding rules of every <style> block of a document, read before its text. The contents of
 * a <style> element are raw text to a browser: the block ends at the first `</style`.
 */
export function readStyleSheet(html: string): StyleSheet {
  const sheet = new StyleSheet();
  STYLE_OPEN.lastIndex = 0;
  for (;;) {
    const start = STYLE_OPEN.exec(html);
    if (start === null) break;
    const tagEnd = html.indexOf('>', start.index);
    if (tagEnd < 0) break;
    STYLE_CLOSE.lastIndex = tagEnd + 1;
    const end = STYLE_CLOSE.exec(html);
    const stop = end === null ? html.length : end.index;
    if (!readCss(withoutComments(html.slice(tagEnd + 1, stop)), sheet)) break;
    if (end === null) break;
    STYLE_OPEN.lastIndex = stop;
  }
  return sheet;
}
