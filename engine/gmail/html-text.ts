/**
 * HTML mail to plain text, for messages that carry no text/plain part. htmlparser2 does the
 * tokenising and entity decoding (script and style content are raw text to it, never markup);
 * this module only keeps the text: script, style, title and template contents dropped, block
 * elements and <br> become line breaks, whitespace collapsed. It streams (no DOM), so deep
 * nesting costs no recursion, and it stops once it has more text than the caller will keep.
 */
import { Parser } from 'htmlparser2';

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

/** Text of an HTML document: at least `maxChars` characters of it when it has that many. */
export function htmlToText(html: string, maxChars: number): { text: string; cut: boolean } {
  const out = new TextSink(maxChars);
  let hidden = 0;
  let pre = 0;
  const parser = new Parser(
    {
      onopentag(name) {
        if (HIDDEN.has(name)) hidden++;
        if (name === 'pre') pre++;
        if (name === 'br') out.text('\n');
        else if (BLOCKS.has(name)) out.breakLine(PARAGRAPHS.has(name) ? 2 : 1);
        if (name === 'li') out.text('- ');
      },
      onclosetag(name) {
        if (HIDDEN.has(name) && hidden > 0) hidden--;
        if (name === 'pre' && pre > 0) pre--;
        if (name === 'td' || name === 'th') out.text(' ');
        else if (BLOCKS.has(name)) out.breakLine(PARAGRAPHS.has(name) ? 2 : 1);
      },
      ontext(data) {
        if (hidden > 0) return;
        out.text(pre > 0 ? data : data.replace(/[ \t\r\n\f\v\u00a0]+/g, ' '));
      },
    },
    { decodeEntities: true },
  );
  out.onFull = () => parser.pause();
  parser.end(html);
  return { text: tidy(out.pieces.join('')), cut: out.full };
}

// Collects text up to a bound; runs of line breaks and spaces cost nothing past the first two,
// so thousands of nested empty blocks cannot fill the budget with blank lines.
class TextSink {
  readonly pieces: string[] = [];
  full = false;
  onFull: () => void = () => {};
  private length = 0;
  private newlines = 2;
  private readonly maxChars: number;
  constructor(maxChars: number) {
    this.maxChars = maxChars;
  }
  text(piece: string): void {
    if (this.full || piece === '' || (piece === ' ' && this.newlines > 0)) return;
    // One more character than the budget is enough to tell the caller there was more.
    if (piece.length > this.maxChars - this.length + 1) {
      piece = piece.slice(0, this.maxChars - this.length + 1);
    }
    this.pieces.push(piece);
    this.length += piece.length;
    let trailing = 0;
    while (trailing < piece.length && piece[piece.length - 1 - trailing] === '\n') trailing++;
    this.newlines = trailing === piece.length ? this.newlines + trailing : trailing;
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
