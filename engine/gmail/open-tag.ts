/**
 * The open tag the HTML-mail tokenizer is reading (html-text.ts): its name, and what its style and
 * hidden attributes say about showing it (inline-style.ts). Only those two attributes are kept,
 * and only on a tag that could change what is seen; a style value is gathered once, in pieces
 * (text and decoded entities: `display&#58;none` is display:none to a browser), and read once,
 * so the work stays linear in the message.
 */
import { readStyle, type StyleEffect } from './inline-style.ts';

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
  private attribute_: '' | 'style' | 'hidden' = '';
  private readonly style: string[] = [];
  private found: StyleEffect | undefined;

  constructor(html: string) {
    this.html = html;
  }

  /** A tag's name; `changeable`: whether its attributes could change what is seen. */
  start(start: number, end: number, changeable: boolean): void {
    this.name = tagName(this.html, start, end);
    this.nameStart = start;
    this.nameEnd = end;
    this.reading = changeable && !VOID.has(this.name);
    this.attribute_ = '';
    this.style.length = 0;
    this.found = undefined;
  }

  /** An attribute's name. */
  attribute(start: number, end: number): void {
    if (!this.reading || (end - start !== 5 && end - start !== 6)) this.attribute_ = '';
    else {
      const name = this.html.slice(start, end).toLowerCase();
      this.attribute_ = name === 'style' || name === 'hidden' ? name : '';
    }
  }

  /** A piece of the attribute's value, as source text (sliced only when it is kept). */
  data(start: number, end: number): void {
    if (this.attribute_ === 'style') this.style.push(this.html.slice(start, end));
  }

  /** One decoded entity in the attribute's value. */
  entity(codePoint: number): void {
    if (this.attribute_ === 'style') this.style.push(String.fromCodePoint(codePoint));
  }

  /** The attribute's end: its value is read now. Any hidden attribute hides, whatever its value. */
  attributeEnd(): void {
    if (this.attribute_ === 'hidden') this.effectOf().hides = true;
    // Every style attribute is read (a browser takes the first): a hiding one hides.
    else if (this.attribute_ === 'style') readStyle(this.style.join(''), this.effectOf());
    this.attribute_ = '';
    this.style.length = 0;
  }

  /** What the tag's attributes say about showing it; undefined when nothing. */
  effect(): StyleEffect | undefined {
    return this.found;
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
