/**
 * The rules of an HTML mail's <style> blocks that change whether text is seen, for the HTML-mail
 * text (html-text.ts): `.note{display:none}` hides every element of class `note` as its inline
 * style would (inline-style.ts reads the declarations). A browser applies a block wherever it is
 * in the document, so every block is read before the text: the blocks are found by the same
 * tokenizer (a `<style>` inside a comment, an attribute or Outlook's `<!--[if mso]>` is no
 * block), then read by one linear pass over their CSS that skips strings, `url()` and nested
 * blocks without recursion.
 *
 * Kept: rules whose selector is a tag name, classes and an id (`p`, `.a`, `.a.b`, `td#x`; each
 * selector of a list), at top level or in `@media` for every screen or `@layer`, and whose
 * declarations hide or show again; a rule that only shows again (an absolute font-size,
 * visibility:visible) is also kept for the last part of a selector with combinators (a column
 * layout's `.col .text{font-size:14px}`), so text a stylesheet sizes again is not lost. Classes
 * and ids are compared without case (a page without a doctype does so; toward hiding). Not read:
 * hiding rules with combinators, pseudo-classes or attribute selectors, CSS escapes, and rules in
 * other at-rules (`@media (max-width: 600px)` holds only on some screens). The rules kept are
 * bounded, and each rule checked against an element is paid from the message's markup budget.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import { readStyle, type StyleEffect, withoutComments } from './inline-style.ts';

/** Rules one message keeps at most (a newsletter has tens that hide or size text). */
export const MAX_SHEET_RULES = 1_000;

// Blocks of readable at-rules nested in one another that are read (deeper ones are skipped).
const MAX_GROUP_DEPTH = 4;

/** A kept rule: what it does, and what else an element needs beyond the key it is found by. */
type SheetRule = { effect: StyleEffect; tag: string; id: string; classes: readonly string[] };

/** The rules of a document that change what is seen, found by one class, id or tag. */
export class StyleSheet {
  private readonly byClass = new Map<string, SheetRule[]>();
  private readonly byId = new Map<string, SheetRule[]>();
  private readonly byTag = new Map<string, SheetRule[]>();
  private readonly seen = new Set<string>();
  private count = 0;
  /** Rules checked by `apply` since the caller last read it (the caller pays for them). */
  checks = 0;

  /** Whether any rule was kept (the tags' class and id attributes are worth reading). */
  get empty(): boolean {
    return this.count === 0;
  }

  /** Keep a rule for one simple selector (a repeated one once); false once the bound is reached. */
  add(selector: Selector, effect: StyleEffect): boolean {
    const key = `${selector.tag}#${selector.id}.${selector.classes.join('.')}:${JSON.stringify(effect)}`;
    if (this.seen.has(key)) return true;
    if (this.count >= MAX_SHEET_RULES) return false;
    this.seen.add(key);
    const [first, ...rest] = selector.classes;
    const rule = { effect, tag: selector.tag, id: selector.id, classes: rest };
    if (first !== undefined) push(this.byClass, first, rule);
    else if (selector.id !== '') push(this.byId, selector.id, { ...rule, id: '' });
    else push(this.byTag, selector.tag, { ...rule, tag: '' });
    this.count++;
    return true;
  }

  /**
   * What the rules matching an element do to it, merged into `into` toward hiding (or `into`
   * unchanged). `tag` is its whole name, `id` and `classes` lower-cased.
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
        this.checks++;
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

/** A simple selector: a tag name ('' for any), an id ('' for any), classes; all lower-cased. */
export type Selector = { tag: string; id: string; classes: string[] };

// A tag name, then classes and ids (names may hold any non-ASCII character); anything else
// (`:`, `[`, `*`, escapes) is not a simple selector. Each repetition starts with `.` or `#`,
// which no name holds, so the match is linear.
const SIMPLE = /^([a-z][a-z0-9-]*)?((?:[.#][a-z0-9_\u0080-\uffff-]+)*)$/i;
const PART = /[.#][a-z0-9_\u0080-\uffff-]+/gi;
// What separates the parts of a complex selector: combinators and whitespace.
const COMBINATORS = new Set(['>', '+', '~', ' ', '\t', '\n', '\r', '\f']);

/** A selector as a simple selector, or undefined when it is not one (or matches nothing). */
export function simpleSelector(text: string): Selector | undefined {
  const match = SIMPLE.exec(text.trim());
  if (!match || (match[1] === undefined && match[2] === '')) return undefined;
  const selector: Selector = { tag: (match[1] ?? '').toLowerCase(), id: '', classes: [] };
  for (const [part] of (match[2] ?? '').toLowerCase().matchAll(PART)) {
    if (part.startsWith('.')) selector.classes.push(part.slice(1));
    // Two different ids on one element match nothing.
    else if (selector.id !== '' && selector.id !== part.slice(1)) return undefined;
    else selector.id = part.slice(1);
  }
  return selector;
}

/** The last compound of a selector with combinators (`.col .text` -> `.text`), by one scan. */
function subjectOf(text: string): Selector | undefined {
  const selector = text.trim();
  let start = selector.length;
  while (start > 0 && !COMBINATORS.has(selector[start - 1] as string)) start--;
  return simpleSelector(selector.slice(start));
}

function hides(effect: StyleEffect): boolean {
  return effect.hides || effect.fontSize === 'zero' || effect.visibility === 'hidden';
}

function showsAgain(effect: StyleEffect): boolean {
  return effect.fontSize === 'shown' || effect.visibility === 'visible';
}

/** One rule: its selectors and its own declarations (nested blocks left out). */
function readRule(selectors: string, declarations: string, sheet: StyleSheet): boolean {
  const effect: StyleEffect = { hides: false };
  readStyle(declarations, effect);
  const hiding = hides(effect);
  if (!hiding && !showsAgain(effect)) return true;
  for (const text of selectors.split(',')) {
    // A rule that hides is kept for a simple selector only (a complex one may match nothing);
    // one that only shows again for its subject too (showing more is the safe mistake there).
    const selector = simpleSelector(text) ?? (hiding ? undefined : subjectOf(text));
    if (selector && !sheet.add(selector, effect)) return false;
  }
  return true;
}

/**
 * Whether an at-rule's block holds rules that apply on every screen: `@media` with no query,
 * or with media types only, one of them `all` or `screen`, and cascade layers (`@layer`).
 */
function readableGroup(prelude: string): boolean {
  const head = prelude.toLowerCase().replace(/\s+/g, ' ');
  if (head === '@layer' || head.startsWith('@layer ')) return true;
  if (head !== '@media' && !head.startsWith('@media ')) return false;
  const types = head.slice('@media'.length).trim();
  if (types === '') return true;
  // A feature in parentheses, `not`, or any other word than a type holds only somewhere.
  let everyScreen = false;
  for (const query of types.split(',')) {
    const words = query
      .trim()
      .split(' ')
      .filter((word) => word !== '');
    const type = words[0] === 'only' ? words[1] : words[0];
    if (words.length > (words[0] === 'only' ? 2 : 1) || type === undefined) return false;
    if (type === 'all' || type === 'screen') everyScreen = true;
  }
  return everyScreen;
}

type Frame = { kind: 'group' } | { kind: 'rule'; selectors: string; body: string[] };

/**
 * Read CSS (its comments already cut) into the sheet in one pass: strings and `url()` are
 * skipped whole (their braces are not blocks), the blocks of other at-rules and rules nested in
 * rules are skipped by counting braces, and a rule's declarations after a nested rule still
 * count. False once the sheet is full.
 */
export function readCss(css: string, sheet: StyleSheet): boolean {
  const frames: Frame[] = [];
  // Braces open in a block being skipped (0: reading).
  let skipping = 0;
  let text: string[] = [];
  let i = 0;
  let from = 0;
  const flush = (to: number) => {
    if (to > from) text.push(css.slice(from, to));
  };
  while (i < css.length) {
    const c = css[i] as string;
    if (c === '"' || c === "'") {
      i = stringEnd(css, i);
      continue;
    }
    if ((c === 'u' || c === 'U') && /^url\(/i.test(css.slice(i, i + 4))) {
      const close = css.indexOf(')', i);
      i = close < 0 ? css.length : close + 1;
      continue;
    }
    if (c === '{') {
      flush(i);
      const prelude = text.join('');
      text = [];
      from = i + 1;
      i++;
      if (skipping > 0) skipping++;
      else {
        const top = frames.at(-1);
        if (top?.kind === 'rule') {
          // A nested rule: skipped; the declarations before it belong to the rule.
          top.body.push(prelude);
          skipping = 1;
        } else {
          const head = cleanPrelude(prelude);
          const depth = frames.length;
          if (!head.startsWith('@')) frames.push({ kind: 'rule', selectors: head, body: [] });
          else if (readableGroup(head) && depth < MAX_GROUP_DEPTH) frames.push({ kind: 'group' });
          else skipping = 1;
        }
      }
      continue;
    }
    if (c === '}') {
      flush(i);
      const inside = text.join('');
      text = [];
      from = i + 1;
      i++;
      if (skipping > 0) {
        skipping--;
        continue;
      }
      const frame = frames.pop();
      if (frame?.kind === 'rule') {
        frame.body.push(inside);
        if (!readRule(frame.selectors, frame.body.join(';'), sheet)) return false;
      }
      continue;
    }
    if (c === ';' && skipping === 0 && frames.at(-1)?.kind !== 'rule') {
      // A statement at-rule (@import ...;) or a stray declaration outside a rule ends here.
      text = [];
      from = i + 1;
    }
    i++;
  }
  return true;
}

/** The index after the string opened at `start` (it ends at its quote or a line break). */
function stringEnd(css: string, start: number): number {
  const quote = css[start];
  let i = start + 1;
  while (i < css.length) {
    const c = css[i];
    if (c === '\\') i += 2;
    else if (c === quote || c === '\n' || c === '\r' || c === '\f') return i + 1;
    else i++;
  }
  return css.length;
}

// HTML comment delimiters in CSS are tokens a stylesheet ignores (old mail wraps its rules in
// them); the text before a `;` belongs to an earlier statement.
function cleanPrelude(prelude: string): string {
  return prelude.replaceAll('<!--', ' ').replaceAll('-->', ' ').trim();
}

/**
 * The CSS of every <style> element of a document, found by the tokenizer that reads the text
 * (htmlparser2 keeps a style element's contents raw, as a browser does).
 */
export function styleBlocks(html: string): string[] {
  const blocks: string[] = [];
  if (!/<style/i.test(html)) return blocks;
  let name = '';
  let inStyle = false;
  let piece: string[] = [];
  const callbacks: TokenizerCallbacks = {
    onopentagname(start, end) {
      name = end - start === 5 ? html.slice(start, end).toLowerCase() : '';
    },
    onopentagend() {
      if (name === 'style') inStyle = true;
    },
    onselfclosingtag() {
      if (name === 'style') inStyle = true;
    },
    onclosetag(start, end) {
      if (end - start !== 5 || html.slice(start, end).toLowerCase() !== 'style' || !inStyle) return;
      blocks.push(piece.join(''));
      piece = [];
      inStyle = false;
    },
    ontext(start, end) {
      if (inStyle) piece.push(html.slice(start, end));
    },
    ontextentity() {},
    onattribname() {},
    onattribdata() {},
    onattribentity() {},
    onattribend() {},
    oncomment() {},
    oncdata() {},
    ondeclaration() {},
    onprocessinginstruction() {},
    onend() {},
  };
  const tokenizer = new Tokenizer({ decodeEntities: true }, callbacks);
  tokenizer.write(html);
  tokenizer.end();
  // A block never closed runs to the end of the document.
  if (inStyle) blocks.push(piece.join(''));
  return blocks;
}

/** The rules of every <style> block of a document, read before its text. */
export function readStyleSheet(html: string): StyleSheet {
  const sheet = new StyleSheet();
  for (const css of styleBlocks(html)) if (!readCss(withoutComments(css), sheet)) break;
  return sheet;
}
