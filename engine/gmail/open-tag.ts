/**
 * The open tag the HTML-mail tokenizer is reading (html-text.ts): its name, and what its style and
 * hidden attributes (inline-style.ts) and, when the document's <style> blocks hide anything, its
 * class and id (style-sheet.ts) say about showing it. Only those attributes are kept, and only
 * on a tag that could change what is seen; a value is gathered once, in pieces (text and decoded
 * entities: `display&#58;none` is display:none to a browser), and read once, so the work stays
 * linear in the message.
 */
import { readStyle, type StyleEffect } from './inline-style.ts';
import type { StyleSheet } from './style-sheet.ts';

// A class attribute is split at ASCII whitespace.
const CLASS_SEPARATOR = /[ \t\n\f\r]+/;

/** Elements that never have contents: they never hide what follows them. */
export const VOID = new Set(
  'area base br col embed hr img input link meta param source track wbr'.split(' '),
);

// No element the text conversion acts on by name has a longer one: longer names are not lowered.
const LONGEST_NAME = 10;

/** A tag's name lower-cased, or '' when it is longer than any name acted on. */
export function tagName(html: string, start: number, end: number): string {
  return end - start > LONGEST_NAME ? '' : html.slice(start, end).toLowerCase();
}

/** A tag's whole name lower-cased (a hidden custom element is matched to its close by it). */
export function fullTagName(html: string, start: number, end: number): string {
  return html.slice(start, end).toLowerCase();
}

/** The tag being read, from its name to its `>`. */
export class OpenTag {
  name = '';
  private readonly html: string;
  private nameStart = 0;
  private nameEnd = 0;
  private reading = false;
  private attribute_: '' | 'style' | 'hidden' | 'class' | 'id' = '';
  private readonly value: string[] = [];
  private found: StyleEffect | undefined;
  private readonly sheet: StyleSheet | undefined;
  private classes = '';
  private id = '';

  /** `sheet`: the document's hiding rules (none read when it has none). */
  constructor(html: string, sheet?: StyleSheet) {
    this.html = html;
    this.sheet = sheet?.empty === false ? sheet : undefined;
  }

  /** A tag's name; `changeable`: whether its attributes could change what is seen. */
  start(start: number, end: number, changeable: boolean): void {
    this.name = tagName(this.html, start, end);
    this.nameStart = start;
    this.nameEnd = end;
    this.reading = changeable && !VOID.has(this.name);
    this.attribute_ = '';
    this.value.length = 0;
    this.found = undefined;
    this.classes = '';
    this.id = '';
  }

  /** An attribute's name. */
  attribute(start: number, end: number): void {
    const length = end - start;
    if (!this.reading || (length !== 5 && length !== 6 && length !== 2)) this.attribute_ = '';
    else {
      const name = this.html.slice(start, end).toLowerCase();
      this.attribute_ =
        name === 'style' || name === 'hidden'
          ? name
          : (name === 'class' || name === 'id') && this.sheet !== undefined
            ? name
            : '';
    }
  }

  /** A piece of the attribute's value, as source text (sliced only when it is kept). */
  data(start: number, end: number): void {
    if (this.attribute_ !== '' && this.attribute_ !== 'hidden')
      this.value.push(this.html.slice(start, end));
  }

  /** One decoded entity in the attribute's value. */
  entity(codePoint: number): void {
    if (this.attribute_ !== '' && this.attribute_ !== 'hidden')
      this.value.push(String.fromCodePoint(codePoint));
  }

  /** The attribute's end: its value is read now. Any hidden attribute hides, whatever its value. */
  attributeEnd(): void {
    if (this.attribute_ === 'hidden') this.effectOf().hides = true;
    // Every style attribute is read (a browser takes the first): a hiding one hides.
    else if (this.attribute_ === 'style') readStyle(this.value.join(''), this.effectOf());
    // A browser takes the first class and id attributes.
    else if (this.attribute_ === 'class' && this.classes === '') this.classes = this.value.join('');
    else if (this.attribute_ === 'id' && this.id === '') this.id = this.value.join('');
    this.attribute_ = '';
    this.value.length = 0;
  }

  /** What the tag's attributes say about showing it; undefined when nothing. */
  effect(): StyleEffect | undefined {
    if (this.sheet === undefined || !this.reading) return this.found;
    // Matched without case, as a page without a doctype matches them (toward hiding).
    const classes = new Set(
      this.classes
        .toLowerCase()
        .split(CLASS_SEPARATOR)
        .filter((name) => name !== ''),
    );
    return this.sheet.apply(this.fullName(), this.id.toLowerCase(), classes, this.found);
  }

  /** Rules checked against tags since the last call (each is paid from the markup budget). */
  takeChecks(): number {
    if (this.sheet === undefined) return 0;
    const checks = this.sheet.checks;
    this.sheet.checks = 0;
    return checks;
  }

  /** The tag's whole name, lower-cased. */
  fullName(): string {
    return fullTagName(this.html, this.nameStart, this.nameEnd);
  }

  private effectOf(): StyleEffect {
    this.found ??= { hides: false };
    return this.found;
  }
}
