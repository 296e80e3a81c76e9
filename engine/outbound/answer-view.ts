/**
 * Views of an outside answer in which a credential it echoes can be found
 * whatever escaping the answer wraps it in, each mapped back to the
 * answer's own characters so that answer-detail.ts blanks the echo's span in
 * the text as it came. A view is the answer with up to two layers of
 * escaping undone, each one kind (JSON backslash escapes and JavaScript's `\xHH`,
 * percent-escapes in either case, HTML character references), then folded:
 * letters lower-cased, whitespace, `+` (a form's space) and invisible characters dropped. One kind
 * per layer, not all at once: undoing a layer then leaves the credential as
 * it was, even one that holds escape-like text itself (`%0a`, `\"`). Every
 * step is one pass over the text.
 */
import { decodeHTML } from 'entities';

/** The text of a view, and for each of its characters the span of the answer it came from. */
export type View = { text: string; starts: Uint32Array; ends: Uint32Array };

/**
 * Layers of escaping undone in the deepest view: two covers an answer
 * quoting a URL that itself quotes a URL (`next=https%3A%2F%2F…%253D<key>`)
 * or HTML quoting JSON; an echo buried deeper is not an echo but a design.
 * At most 1 + 3 + 9 views.
 */
export const DECODE_ROUNDS = 2;

/** The answer's views, from undecoded to DECODE_ROUNDS layers undone, each folded. */
export function answerViews(text: string): View[] {
  const views: View[] = [];
  const seen = new Set<string>();
  let layers = [identity(text)];
  for (let round = 0; round <= DECODE_ROUNDS; round++) {
    const next: View[] = [];
    for (const layer of layers) {
      if (seen.has(layer.text)) continue;
      seen.add(layer.text);
      views.push(round === 0 ? fold(layer.text) : compose(fold(layer.text), layer));
      if (round === DECODE_ROUNDS) continue;
      for (const [starter, decoder] of DECODERS) {
        // Nothing of that kind to undo: the view would be this one.
        if (!layer.text.includes(starter)) continue;
        const decoded = decodeWith(layer.text, starter, decoder);
        if (decoded.text !== layer.text) next.push(compose(decoded, layer));
      }
    }
    layers = next;
  }
  return views;
}

/** What a credential looks like in a view: each of its own views' texts (none empty). */
export function credentialForms(secret: string): string[] {
  const forms = new Set<string>();
  // URLs carry a lone surrogate as U+FFFD.
  for (const spelling of new Set([secret, secret.toWellFormed()]))
    for (const view of answerViews(spelling)) if (view.text) forms.add(view.text);
  return [...forms];
}

function identity(text: string): View {
  const starts = new Uint32Array(text.length);
  const ends = new Uint32Array(text.length);
  for (let i = 0; i < text.length; i++) {
    starts[i] = i;
    ends[i] = i + 1;
  }
  return { text, starts, ends };
}

// `outer`'s spans are in `inner`'s characters; the result's are in what `inner` maps to.
function compose(outer: View, inner: View): View {
  const starts = new Uint32Array(outer.text.length);
  const ends = new Uint32Array(outer.text.length);
  for (let i = 0; i < outer.text.length; i++) {
    starts[i] = inner.starts[outer.starts[i] as number] as number;
    ends[i] = inner.ends[(outer.ends[i] as number) - 1] as number;
  }
  return { text: outer.text, starts, ends };
}

/** A builder of a view: UTF-16 units appended with the span of the source they came from. */
function builder(capacity: number) {
  let units = new Uint16Array(capacity);
  let starts = new Uint32Array(capacity);
  let ends = new Uint32Array(capacity);
  let length = 0;
  return {
    add(chars: string, from: number, to: number) {
      if (chars.length === 1 && length < units.length) {
        units[length] = chars.charCodeAt(0);
        starts[length] = from;
        ends[length++] = to;
        return;
      }
      if (length + chars.length > units.length) {
        // Escapes shrink what they stand for, so this is rare: double.
        const grown = 2 * (length + chars.length);
        units = grow(units, new Uint16Array(grown));
        starts = grow(starts, new Uint32Array(grown));
        ends = grow(ends, new Uint32Array(grown));
      }
      for (let k = 0; k < chars.length; k++) {
        units[length] = chars.charCodeAt(k);
        starts[length] = from;
        ends[length++] = to;
      }
    },
    done(): View {
      let text = '';
      // In slices (an argument list has a limit), applied (spreading a typed array is slow).
      for (let at = 0; at < length; at += 4096)
        text += Reflect.apply(
          String.fromCharCode,
          null,
          units.subarray(at, Math.min(length, at + 4096)),
        );
      return { text, starts: starts.subarray(0, length), ends: ends.subarray(0, length) };
    },
  };
}

function grow<T extends Uint16Array | Uint32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

// Characters that render as nothing (zero-width space, soft hyphen, word joiner...): a
// credential with them between its letters reads as the credential.
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/u;

// Lower-cased (where that keeps one UTF-16 unit), without whitespace, `+` and invisibles.
function fold(text: string): View {
  const view = builder(text.length);
  for (let i = 0; i < text.length; ) {
    const code = text.charCodeAt(i);
    if (code < 128) {
      if (!(code === 43 || code === 32 || (code >= 9 && code <= 13)))
        view.add(String.fromCharCode(code >= 65 && code <= 90 ? code + 32 : code), i, i + 1);
      i += 1;
      continue;
    }
    // A whole code point: invisibles above U+FFFF (tag characters, variation selectors) too.
    const width = (text.codePointAt(i) as number) > 0xffff ? 2 : 1;
    const char = text.slice(i, i + width);
    if (!/\s/.test(char) && !INVISIBLE.test(char)) {
      const lower = char.toLowerCase();
      view.add(lower.length === char.length ? lower : char, i, i + width);
    }
    i += width;
  }
  return view.done();
}

// One left-to-right pass; an escape that does not decode stays as it is.
function decodeWith(text: string, starter: string, decoder: Decoder): View {
  const view = builder(text.length);
  let i = 0;
  while (i < text.length) {
    const found = text[i] === starter ? decoder(text, i) : undefined;
    if (found) {
      view.add(found.chars, i, found.end);
      i = found.end;
    } else {
      view.add(text[i] as string, i, i + 1);
      i += 1;
    }
  }
  return view.done();
}

type Decoder = (text: string, at: number) => { chars: string; end: number } | undefined;

// Each kind of escaping an answer may wrap a credential in: the character its escapes start with.
const DECODERS: ReadonlyArray<readonly [string, Decoder]> = [
  ['\\', backslashEscape],
  ['%', percentEscape],
  ['&', characterReference],
];

const SIMPLE: Record<string, string> = {
  '/': '/',
  '\\': '\\',
  '"': '"',
  "'": "'",
  n: '\n',
  r: '\r',
  t: '\t',
  b: '\b',
  f: '\f',
};

// JSON's and JavaScript's: `\/`, `\"`, `\n`…, `\u002F` (a surrogate pair is two), `\x2F`.
function backslashEscape(text: string, at: number): ReturnType<Decoder> {
  const next = text[at + 1] ?? '';
  const simple = SIMPLE[next];
  if (simple) return { chars: simple, end: at + 2 };
  const digits = next === 'u' ? 4 : next === 'x' ? 2 : 0;
  const hex = text.slice(at + 2, at + 2 + digits);
  if (!digits || !HEX.test(hex) || hex.length !== digits) return undefined;
  return { chars: String.fromCharCode(Number.parseInt(hex, 16)), end: at + 2 + digits };
}

const HEX = /^[0-9a-f]+$/i;

// `%2f` or `%2F`; a multi-byte character only whole (its UTF-8 bytes each escaped).
function percentEscape(text: string, at: number): ReturnType<Decoder> {
  const lead = byteAt(text, at);
  if (lead === undefined) return undefined;
  if (lead < 0x80) return { chars: String.fromCharCode(lead), end: at + 3 };
  const count = lead >= 0xf8 ? 0 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (!count) return undefined;
  let point = lead & (0x7f >> count);
  for (let k = 1; k < count; k++) {
    const byte = byteAt(text, at + 3 * k);
    if (byte === undefined || byte >> 6 !== 0b10) return undefined;
    point = (point << 6) | (byte & 0x3f);
  }
  // Not UTF-8 (an overlong form, a surrogate, past U+10FFFF): left as it is.
  const least = count === 2 ? 0x80 : count === 3 ? 0x800 : 0x10000;
  if (point < least || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return undefined;
  return { chars: String.fromCodePoint(point), end: at + 3 * count };
}

function byteAt(text: string, at: number): number | undefined {
  const hex = text.slice(at + 1, at + 3);
  return text[at] === '%' && hex.length === 2 && HEX.test(hex)
    ? Number.parseInt(hex, 16)
    : undefined;
}

// `&#x2F;`, `&#47;`, `&sol;` (and the old ones without `;`, as browsers read them). The digits'
// run is read from its `&` only, and names are short: the pass stays linear.
const REFERENCE = /&(?:#[xX][0-9a-fA-F]+;?|#[0-9]+;?|[A-Za-z][A-Za-z0-9]{1,31};?)/y;

function characterReference(text: string, at: number): ReturnType<Decoder> {
  REFERENCE.lastIndex = at;
  const match = REFERENCE.exec(text)?.[0];
  if (!match) return undefined;
  const chars = decodeHTML(match);
  return chars === match ? undefined : { chars, end: at + match.length };
}
