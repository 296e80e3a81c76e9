/**
 * The skeleton of untrusted text (after UTS #39): what the text looks like,
 * not how it is spelled. Each code point is folded on its own: invisible
 * (default-ignorable) characters vanish, NFD splits off combining marks,
 * which are dropped, confusables become their prototypes (NFKD undoes the
 * compatibility forms the table has no row for), and case does not count.
 * Two views are built in one linear pass:
 * - the injection view keeps ASCII (words, blanks collapsed to one space,
 *   punctuation) and shows any other character as `*`, for the phrases;
 * - the marker view keeps only Latin letters, digits, `|` and `<`/`>` (every
 *   separator dropped, any other letter a `*`), for marker detection, with the
 *   offset in the content of each of its characters.
 * ASCII stays itself (upper-cased) in both views; the confusables table's few
 * ASCII rows (I l 1 |, 0 O) are regex classes in the matchers (lookAlike).
 * Every code point yields at most MAX_FOLD characters per view, and its fold
 * is computed once and cached, so the work is linear in the input.
 */
import { hasPrototype, prototypeOf } from './confusables.ts';

/** The most characters one code point contributes to a view. */
export const MAX_FOLD = 18;

/** A code point's contribution to the two views. */
type Fold = { readonly injection: string; readonly marker: string };

/** The skeleton of one ASCII character: its upper case (the table's ASCII rows are left to the matchers). */
function foldAscii(char: string): string {
  return char.toUpperCase();
}

// The table's ASCII rows (I, l, 1 and | look alike; so do 0 and O) as regex classes: ASCII text
// stays as it is in the views, so plain ASCII needs no per-character work.
const LOOK_ALIKES: Record<string, string> = { I: '[IL1|]', L: '[LI1|]', O: '[O0]', '|': '[|LI1]' };

/** A regex fragment matching an upper-case ASCII letter (or `|`) in a view, look-alikes included. */
export function lookAlike(char: string): string {
  return LOOK_ALIKES[char] ?? char.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

const IGNORABLE = /^\p{Default_Ignorable_Code_Point}$/u;
const NONSPACING_MARK = /^[\p{Mn}\p{Me}]$/u;
const SPACING_MARK = /^\p{Mc}$/u;
const ALL_ASCII = /^[\x20-\x7e\n\t\r]*$/;

// Letters of the marker words: when a character has two Latin readings, one of these wins.
const MARKER_LETTERS = /^[^A-Z]*(?:[ACDELNORSTUX][^A-Z]*)+$/;

/**
 * One reading of a character: its prototype, else its compatibility form, else itself. When the
 * prototype is no Latin text (the table maps Ⓒ to ©, ˢ to a syllabic) but the compatibility
 * form is, the compatibility form wins: it is the letter a reader sees.
 */
function reading(char: string, depth: number): string {
  const prototype = prototypeOf(char);
  const compatible = char.normalize('NFKD');
  const viaCompatible = compatible === char ? undefined : foldText(compatible, depth + 1);
  if (prototype !== undefined) {
    const viaPrototype = foldText(prototype, depth + 1);
    const latin = viaCompatible !== undefined && !ALL_ASCII.test(viaPrototype);
    return latin && ALL_ASCII.test(viaCompatible) ? viaCompatible : viaPrototype;
  }
  if (viaCompatible !== undefined) return viaCompatible;
  // A spacing mark that imitates nothing is a mark like any other.
  return SPACING_MARK.test(char) ? '' : char;
}

/**
 * The skeleton of a non-ASCII character: its reading, or the reading of its upper case (case
 * does not matter). Of two Latin readings (Greek ν reads v, its capital N) the one made of
 * marker letters wins, so neither disguise slips through.
 */
function foldOther(char: string, depth: number): string {
  if (depth > 3) return char;
  const own = reading(char, depth);
  const upper = char.toUpperCase();
  if (upper === char) return own;
  const viaUpper = foldText(upper, depth + 1);
  const latin = [own, viaUpper].filter((text) => ALL_ASCII.test(text));
  return latin.find((text) => MARKER_LETTERS.test(text)) ?? latin[0] ?? own;
}

/** The skeleton of a short text (one code point or a prototype): NFD first, as UTS #39 does. */
export function foldText(text: string, depth = 0): string {
  let out = '';
  for (const char of text.normalize('NFD')) {
    if (IGNORABLE.test(char) || NONSPACING_MARK.test(char)) continue;
    out += (char.codePointAt(0) as number) < 0x80 ? foldAscii(char) : foldOther(char, depth);
  }
  return out;
}

// Letters and digits of other scripts separate marker letters; modifier letters (ー, the
// prototype of long dashes) do not.
const LETTER = /^[\p{Lu}\p{Ll}\p{Lt}\p{Lo}\p{N}]$/u;
const SPACE = /^\s$/u;

// Line breaks beyond ASCII (NEL, U+2028, U+2029) read as a newline: a line starts after them. The
// confusables table makes the last two a space, and NEL is a control, not `\s`, to JavaScript.
const NEWLINE: Fold = { injection: '\n', marker: '' };
const lineBreak = (cp: number): Fold | undefined =>
  cp === 0x85 || cp === 0x2028 || cp === 0x2029 ? NEWLINE : undefined;

const FOREIGN = { injection: '*', marker: '*' } as const;
const OTHER = { injection: '*', marker: '' } as const;
// Stable under NFKC case folding, no case at all, no mark, blank or invisible (and, tested
// apart, no canonical decomposition): nothing to undo.
const PLAIN =
  /^(?![\p{Changes_When_NFKC_Casefolded}\p{Cased}\p{M}\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cs}])[^\p{Cc}]$/u;

/** Split one code point's skeleton into its two views (bounded to MAX_FOLD each). */
function views(skeleton: string): Fold {
  let injection = '';
  let marker = '';
  for (const char of skeleton) {
    const ascii = (char.codePointAt(0) as number) < 0x80;
    // A letter of another script anywhere in it: the code point is one foreign letter.
    if (!ascii && LETTER.test(char)) return FOREIGN;
    if (ascii) injection += char === '\n' ? char : SPACE.test(char) ? ' ' : char;
    else if (SPACE.test(char)) injection += ' ';
    else if (!injection.endsWith('*')) injection += '*';
    if (/^[A-Z0-9<>|]$/.test(char)) marker += char;
  }
  return { injection: injection.slice(0, MAX_FOLD), marker: marker.slice(0, MAX_FOLD) };
}

/**
 * The fold of a code point that has nothing to undo, decided by property tests alone, or
 * undefined when it needs the full fold (normalisation and the table).
 */
function plainFold(cp: number): Fold | undefined {
  if (cp < 0x80 || hasPrototype(cp)) return undefined;
  const char = String.fromCodePoint(cp);
  // Planes 2-13, 15 and 16 (ideographs, unassigned, private use): nothing else to undo there.
  if (cp >= 0x20000 && (cp < 0xe0000 || cp > 0xeffff)) return LETTER.test(char) ? FOREIGN : OTHER;
  if (!PLAIN.test(char) || char.normalize('NFD') !== char) return undefined;
  // Most of Unicode (CJK, other scripts, symbols, unassigned) can only be itself.
  return LETTER.test(char) ? FOREIGN : OTHER;
}

/** The fold of one code point (uncached). */
export function foldCodePoint(cp: number): Fold {
  return lineBreak(cp) ?? plainFold(cp) ?? views(foldText(String.fromCodePoint(cp)));
}

/** Full fold, without the shortcut (tests compare the two). */
export function foldCodePointFully(cp: number): Fold {
  return lineBreak(cp) ?? views(foldText(String.fromCodePoint(cp)));
}

const ASCII_FOLDS: Fold[] = Array.from({ length: 0x80 }, (_, cp) => foldCodePoint(cp));

// Folds of code points seen so far. BMP ones by index (at most 65,536, all distinct). Beyond
// the BMP only the code points that need the full fold are kept (those with a table row or
// something to normalise: a fixed set of some ten thousand); the plain ones are
// decided again each time, cheaply. Nothing is ever evicted, so no sequence of requests can
// make the costly folds be computed twice, and hostile text cannot grow the cache past Unicode.
const bmpIndex = new Int32Array(0x10000);
const bmpFolds: Fold[] = [{ injection: '', marker: '' }];
const astral = new Map<number, Fold>();

function foldOf(cp: number): Fold {
  if (cp < 0x80) return ASCII_FOLDS[cp] as Fold;
  if (cp < 0x10000) {
    const index = bmpIndex[cp] as number;
    if (index !== 0) return bmpFolds[index] as Fold;
    const fold = foldCodePoint(cp);
    bmpIndex[cp] = bmpFolds.push(fold) - 1;
    return fold;
  }
  const known = astral.get(cp);
  if (known !== undefined) return known;
  const plain = plainFold(cp);
  if (plain !== undefined) return plain;
  const fold = views(foldText(String.fromCodePoint(cp)));
  astral.set(cp, fold);
  return fold;
}

/** How many BMP code points have a kept fold (tests watch warming). */
export function bmpFoldsKept(): number {
  return bmpFolds.length - 1;
}

/** How many code points beyond the BMP have a kept fold (tests check the bound). */
export function astralFoldsKept(): number {
  return astral.size;
}

/**
 * Both views of a content, and `starts[k]`: the content offset of marker-view character k.
 * Plain ASCII has neither a marker view nor offsets (null): its matchers search its upper case,
 * whose offsets are its own.
 */
export type Skeleton = {
  injection: string;
  marker: string | null;
  starts: Int32Array | null;
  /** The same views with tag characters read as the ASCII they encode (only when there are any). */
  tagged?: Skeleton;
};

// The views are ASCII, so they are written as bytes into buffers reused across calls (grown on
// demand, dropped after an input that made them larger than KEEP) and read back as one string each.
const KEEP = 1 << 18;

/** Buffers for one reading's two views, and the offsets of the marker view's characters. */
class ViewWriter {
  injection = new Uint8Array(1 << 12);
  marker = new Uint8Array(1 << 12);
  starts = new Int32Array(1 << 12);
  inj = 0;
  mark = 0;
  lastSpace = false;

  reset(): void {
    this.inj = 0;
    this.mark = 0;
    this.lastSpace = false;
  }

  /** Append one code point's fold, found at `at` in the content. */
  write(fold: Fold, at: number): void {
    const size = Math.max(this.inj, this.mark) + MAX_FOLD;
    if (size > this.injection.length) this.grow(size);
    const injection = fold.injection;
    // Runs of spaces collapse so phrase patterns see single spaces.
    const space = injection === ' ';
    if (!(space && this.lastSpace)) {
      for (let i = 0; i < injection.length; i++)
        this.injection[this.inj++] = injection.charCodeAt(i);
    }
    if (injection !== '') this.lastSpace = space;
    const marker = fold.marker;
    for (let i = 0; i < marker.length; i++) {
      this.starts[this.mark] = at;
      this.marker[this.mark++] = marker.charCodeAt(i);
    }
  }

  private grow(size: number): void {
    const grown = Math.max(size, this.injection.length * 2);
    this.injection = copyInto(new Uint8Array(grown), this.injection);
    this.marker = copyInto(new Uint8Array(grown), this.marker);
    this.starts = copyInto(new Int32Array(grown), this.starts);
  }

  /** The views written so far; the buffers are dropped when an input made them large. */
  take(): Skeleton {
    const result: Skeleton = {
      injection: Buffer.from(this.injection.buffer, 0, this.inj).toString('latin1'),
      marker: Buffer.from(this.marker.buffer, 0, this.mark).toString('latin1'),
      starts: this.starts.slice(0, this.mark),
    };
    if (this.injection.length > KEEP) {
      this.injection = new Uint8Array(1 << 12);
      this.marker = new Uint8Array(1 << 12);
      this.starts = new Int32Array(1 << 12);
    }
    this.reset();
    return result;
  }
}

function copyInto<T extends Uint8Array | Int32Array>(into: T, from: T): T {
  into.set(from as never);
  return into;
}

const plain = new ViewWriter();
const tagged = new ViewWriter();

// Tag characters U+E0020..U+E007E: invisible, yet models read them as the ASCII they encode.
const TAG_CHAR = /[\u{e0020}-\u{e007e}]/u;
const FIRST_TAG = 0xe0020;
const LAST_TAG = 0xe007e;

// biome-ignore lint/suspicious/noControlCharactersInRegex: the whole ASCII range, controls included, is meant.
const ASCII_ONLY = /^[\x00-\x7f]*$/;

/** The injection view of plain ASCII (no disguise to undo but case and spacing): native string passes. */
function asciiSkeleton(content: string): Skeleton {
  // Only runs and non-space blanks change: the common single space is no match at all.
  const injection = content.toUpperCase().replace(/[\t\v\f\r ]{2,}|[\t\v\f\r]/g, ' ');
  return { injection, marker: null, starts: null };
}

/**
 * Build the views in one pass over the content (`perCharacter`: even for plain ASCII, as tests
 * compare). Content with tag characters gets a second reading in the same pass (`tagged`), with
 * each tag read as its ASCII: the views that drop them see the tags as separators, this one as
 * letters, and a marker is found in either.
 */
export function skeleton(content: string, perCharacter = false): Skeleton {
  if (!perCharacter && ASCII_ONLY.test(content)) return asciiSkeleton(content);
  const tags = TAG_CHAR.test(content);
  plain.reset();
  tagged.reset();
  for (let at = 0; at < content.length; ) {
    const cp = content.codePointAt(at) as number;
    const fold = foldOf(cp);
    plain.write(fold, at);
    if (tags) {
      const tag = cp >= FIRST_TAG && cp <= LAST_TAG;
      tagged.write(tag ? (ASCII_FOLDS[cp - 0xe0000] as Fold) : fold, at);
    }
    at += cp > 0xffff ? 2 : 1;
  }
  const result = plain.take();
  if (tags) result.tagged = tagged.take();
  return result;
}

/**
 * Fold every BMP code point ahead of time, a slice per event-loop turn (about 3 ms each), so
 * the first hostile text full of distinct characters does not pay for them all at once (about
 * 100 ms). Timers are unref'd: warming never keeps a process alive.
 */
export function warmFolds(sliceSize = 2048): void {
  let next = 0x80;
  const slice = () => {
    const end = Math.min(next + sliceSize, 0x10000);
    for (; next < end; next++) if (next < 0xd800 || next > 0xdfff) foldOf(next);
    if (next < 0x10000) setTimeout(slice, 0).unref();
  };
  setTimeout(slice, 0).unref();
}
