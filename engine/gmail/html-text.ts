/**
 * HTML mail to plain text, for messages that carry no text/plain part. htmlparser2's Tokenizer
 * does the tokenising and entity decoding (script, style and title contents are raw text to it,
 * never markup); this module only keeps the text a reader sees: script, style, title and
 * template contents dropped, and elements hidden by their attributes (hidden, an inline style of
 * display:none and the like, or a class or id a <style> rule hides: hidden-regions.ts,
 * inline-style.ts, style-sheet.ts), where a sender can put words
 * for the agent alone; block elements and <br> become line breaks, whitespace collapsed. The
 * work is bounded whatever the markup: no element stack is kept (htmlparser2's Parser shifts an
 * array per open tag, quadratic in nesting, and builds an object of every tag's attributes), each
 * token costs the same at any depth, and every markup token is paid from a budget the caller
 * shares across a message's parts, so markup that yields no text cannot run on.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';
import { HiddenRegions } from './hidden-regions.ts';
import { fullTagName, OpenTag, tagName, VOID } from './open-tag.ts';
import { readStyleSheet } from './style-sheet.ts';

/**
 * Markup tokens (tags, attributes, comments, entities, declarations) one message may cost, all
 * its HTML parts together. A 170 KB newsletter of nested tables is ~13,000; this reads several
 * times that, and costs ~6 ms on a small server.
 */
export const MAX_MARKUP_TOKENS = 100_000;

/** What is left of a message's markup budget; each htmlToText call spends from it. */
export type MarkupBudget = { markupTokens: number };

// Elements whose contents are never shown to a reader.
const HIDDEN = new Set(['script', 'style', 'title', 'template']);

// Elements that start on a new line in a browser.
const BLOCKS = new Set(
  [
    'address article aside blockquote body center dd div dl dt fieldset figcaption figure',
    'footer form h1 h2 h3 h4 h5 h6 header hr html li main nav ol p pre section table tbody',
    'tfoot thead tr ul',
  ]
    .join(' ')
    .split(' '),
);

// Blocks a browser sets apart with a blank line; the other blocks only start a new line.
const PARAGRAPHS = new Set('blockquote h1 h2 h3 h4 h5 h6 ol p pre table ul'.split(' '));

const WHITESPACE_RUN = /[ \t\r\n\f\v\u00a0]+/g;

/**
 * Text of an HTML document: at least `maxChars` characters of it when it has that many and the
 * budget lasts. `cut` when text was left out (the text was longer, or the budget ran out).
 */
export function htmlToText(
  html: string,
  maxChars: number,
  budget: MarkupBudget = { markupTokens: MAX_MARKUP_TOKENS },
): { text: string; cut: boolean } {
  const out = new TextSink(maxChars);
  const regions = new HiddenRegions();
  // Rules of <style> blocks apply wherever the block is: all of them are read first.
  const tag = new OpenTag(html, readStyleSheet(html));
  let hidden = 0;
  let pre = 0;
  let spent = false;
  // One markup token paid; false (and the tokenizer paused) once the budget is gone.
  const pay = (): boolean => {
    if (spent) return false;
    if (--budget.markupTokens >= 0) return true;
    spent = true;
    tokenizer.pause();
    return false;
  };
  const payMany = (tokens: number): boolean => {
    if (spent) return false;
    budget.markupTokens -= tokens;
    if (budget.markupTokens >= 0) return true;
    spent = true;
    tokenizer.pause();
    return false;
  };
  const shown = (data: string) => {
    if (hidden > 0 || !regions.shown()) return;
    if (pre > 0) out.text(data);
    else out.flow(data.replace(WHITESPACE_RUN, ' '));
  };
  // The open tag is complete (its attributes read): what it does to the text is known.
  const opened = () => {
    const name = tag.name;
    if (HIDDEN.has(name)) hidden++;
    if (name === 'pre') pre++;
    if (!VOID.has(name)) {
      const effect = tag.effect();
      // Each stylesheet rule checked against the tag is paid like a markup token.
      const checks = tag.takeChecks();
      if (checks > 0 && !payMany(checks)) return;
      if (effect !== undefined || regions.active()) regions.open(tag.fullName(), effect);
    }
    if (!regions.shown()) return;
    if (name === 'br') out.text('\n');
    else if (BLOCKS.has(name)) out.breakLine(PARAGRAPHS.has(name) ? 2 : 1);
    // A cell starts after a space too: an unclosed <td> is closed by the next one.
    else if (name === 'td' || name === 'th') out.flow(' ');
    if (name === 'li') out.text('- ');
  };
  const callbacks: TokenizerCallbacks = {
    onopentagname(start, end) {
      if (pay()) tag.start(start, end, regions.changeable());
    },
    onattribname(start, end) {
      if (!spent) tag.attribute(start, end);
    },
    onattribdata(start, end) {
      if (!spent) tag.data(start, end);
    },
    onattribentity(codePoint) {
      if (pay()) tag.entity(codePoint);
    },
    onattribend() {
      if (pay()) tag.attributeEnd();
    },
    // A self-closing slash on an element that is not void is ignored, as browsers do.
    onopentagend() {
      if (!spent) opened();
    },
    onselfclosingtag() {
      if (!spent) opened();
    },
    onclosetag(start, end) {
      if (!pay()) return;
      const name = tagName(html, start, end);
      const wasShown = regions.shown();
      if (regions.active()) regions.close(fullTagName(html, start, end));
      if (HIDDEN.has(name) && hidden > 0) hidden--;
      if (name === 'pre' && pre > 0) pre--;
      if (!wasShown) return;
      // </br> is a line break to a browser too.
      if (name === 'br') out.text('\n');
      else if (name === 'td' || name === 'th') out.flow(' ');
      else if (BLOCKS.has(name)) out.breakLine(PARAGRAPHS.has(name) ? 2 : 1);
    },
    ontext(start, end) {
      if (!spent) shown(html.slice(start, end));
    },
    ontextentity(codePoint) {
      if (pay()) shown(String.fromCodePoint(codePoint));
    },
    oncomment: pay,
    oncdata: pay,
    ondeclaration: pay,
    onprocessinginstruction: pay,
    onend() {},
  };
  const tokenizer = new Tokenizer({ decodeEntities: true }, callbacks);
  out.onFull = () => tokenizer.pause();
  // No tokens left before this part: nothing of it is read.
  if (budget.markupTokens > 0) {
    tokenizer.write(html);
    tokenizer.end();
  } else spent = html !== '';
  return { text: tidy(out.pieces.join('')), cut: out.full || spent };
}

// Collects text up to a bound; runs of line breaks and spaces cost nothing past the first two,
// so thousands of nested empty blocks cannot fill the budget with blank lines.
class TextSink {
  readonly pieces: string[] = [];
  full = false;
  onFull: () => void = () => {};
  private length = 0;
  private newlines = 2;
  private space = false;
  private readonly maxChars: number;
  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }
  /** Collapsed text: a space after a space or a line break is dropped, as a browser does. */
  flow(piece: string): void {
    this.text((this.space || this.newlines > 0) && piece[0] === ' ' ? piece.slice(1) : piece);
  }
  text(piece: string): void {
    if (this.full || piece === '') return;
    // One more character than the budget is enough to tell the caller there was more.
    if (piece.length > this.maxChars - this.length + 1) {
      piece = piece.slice(0, this.maxChars - this.length + 1);
    }
    this.pieces.push(piece);
    this.length += piece.length;
    let trailing = 0;
    while (trailing < piece.length && piece[piece.length - 1 - trailing] === '\n') trailing++;
    this.newlines = trailing === piece.length ? this.newlines + trailing : trailing;
    this.space = piece[piece.length - 1] === ' ';
    if (this.length > this.maxChars) {
      this.full = true;
      this.onFull();
    }
  }
  breakLine(count: number): void {
    if (this.newlines < count) this.text('\n'.repeat(count - this.newlines));
  }
}

// Trims each line (linear: no backtracking pattern over long runs of spaces) and keeps at most one empty line between paragraphs.
function tidy(text: string): string {
  return text
    .split('\n')
    .map((line) => line.trimEnd().replace(/^ /, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .replace(/^\n{1,2}|\n{1,2}$/g, '');
}
