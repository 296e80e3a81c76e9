/**
 * What an element's inline style does to whether its text is seen, for the HTML-mail text
 * (html-text.ts): display:none, opacity:0 and Outlook's mso-hide:all hide the element and all
 * inside it; font-size:0 and visibility:hidden|collapse hide it too, but a descendant may set
 * them back (a column layout sets font-size:0 on its columns and the size on the text in them).
 * This reads a style attribute's value (and a rule's declarations for style-sheet.ts); CSS
 * escapes are not read.
 * Every step is one linear pass over the value (the value is untrusted and up to the size of the
 * message): comments are cut with a scan, never a pattern, and the patterns are anchored.
 */

/** What an element's attributes say about showing it; undefined: it inherits its parent's. */
export type StyleEffect = {
  hides: boolean;
  fontSize?: 'zero' | 'shown';
  visibility?: 'hidden' | 'visible';
};

// A number that is zero, with any unit or none: 0, .0, 0.0px, -0em, 0%, 0e3pt.
const ZERO = /^[+-]?(?:0+(?:\.0*)?|\.0+)(?:e[+-]?[0-9]+)?(?:[a-z]+|%)?$/;
// A font size that does not depend on its parent's (which may be 0): an absolute length.
const ABSOLUTE_SIZE =
  /^\+?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?(?:px|pt|pc|in|cm|mm|q|rem|vw|vh|vmin|vmax)$/;
const SIZE_KEYWORDS = new Set(
  'xx-small x-small small medium large x-large xx-large xxx-large'.split(' '),
);

type Rule = (value: string, effect: StyleEffect) => void;

// One row per property that can hide; a hiding value wins over a showing one of the same style
// (whatever their order: a browser takes the last, this fails toward hiding).
const RULES = new Map<string, Rule>([
  ['display', (value, effect) => hidesWhen(value === 'none', effect)],
  ['opacity', (value, effect) => hidesWhen(ZERO.test(value), effect)],
  ['mso-hide', (value, effect) => hidesWhen(value === 'all', effect)],
  [
    'font-size',
    (value, effect) => {
      if (ZERO.test(value)) effect.fontSize = 'zero';
      else if (
        effect.fontSize === undefined &&
        (ABSOLUTE_SIZE.test(value) || SIZE_KEYWORDS.has(value))
      )
        effect.fontSize = 'shown';
    },
  ],
  [
    'visibility',
    (value, effect) => {
      if (value === 'hidden' || value === 'collapse') effect.visibility = 'hidden';
      else if (value === 'visible' && effect.visibility === undefined)
        effect.visibility = 'visible';
    },
  ],
]);

function hidesWhen(hiding: boolean, effect: StyleEffect): void {
  if (hiding) effect.hides = true;
}

/** Adds what one style attribute's value (entities already decoded) says to `effect`. */
export function readStyle(style: string, effect: StyleEffect): void {
  // Properties and keywords are case-insensitive: DISPLAY:NONE hides.
  for (const declaration of withoutComments(style.toLowerCase()).split(';')) {
    const colon = declaration.indexOf(':');
    if (colon < 0) continue;
    const rule = RULES.get(declaration.slice(0, colon).trim());
    if (rule === undefined) continue;
    // `none !important` is none; anything after a `!` is not part of the value.
    const value = declaration.slice(colon + 1);
    const bang = value.indexOf('!');
    rule((bang < 0 ? value : value.slice(0, bang)).trim(), effect);
  }
}

/**
 * The CSS without its comments (a comment between `display:` and `none` is nothing to a
 * browser: the element is hidden), in one pass:
 * a comment never closed runs to the end; `/*` inside a quoted string is not a comment, so
 * `font-family:"/*";display:none` still hides.
 */
export function withoutComments(css: string): string {
  const kept: string[] = [];
  let start = 0;
  let quote = '';
  let i = 0;
  while (i < css.length) {
    const c = css[i];
    if (c === '\\')
      i += 2; // an escaped character never opens or closes anything
    else if (quote !== '') {
      // A string ends at its quote, or (unclosed) at a line break.
      if (c === quote || c === '\n' || c === '\r' || c === '\f') quote = '';
      i++;
    } else if (c === '"' || c === "'") {
      quote = c;
      i++;
    } else if (c === '/' && css[i + 1] === '*') {
      kept.push(css.slice(start, i));
      const end = css.indexOf('*/', i + 2);
      start = i = end < 0 ? css.length : end + 2;
    } else i++;
  }
  kept.push(css.slice(start));
  return kept.join('');
}
