/**
 * An independent reading of text, for the safety tests: how it looks to a
 * reader, built from the Unicode confusables table and the lists in the
 * issue alone (not from the wrapper's own code), and a count of what in it
 * reads as a marker word or a bracket run.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
export const TABLE = require('unhomoglyph/data.json') as Record<string, string>;
export const unhomoglyph = require('unhomoglyph') as (text: string) => string;

const MARKER_WORD = 'EXTERNALUNTRUSTEDCONTENT';

/** What a character reads as: an upper-case Latin letter, `<`/`>` runs, or undefined. */
const READS_AS = new Map<string, string>();
for (const [char, prototype] of Object.entries(TABLE)) {
  if (/^[A-Za-z]$/.test(prototype)) READS_AS.set(char, prototype.toUpperCase());
  if (/^[<>]+$/.test(prototype)) READS_AS.set(char, prototype);
  if (prototype === '\u276c' || prototype === '\u276d') {
    READS_AS.set(char, prototype === '\u276c' ? '<' : '>');
  }
}
const SMALL_CAPITALS = 'ᴀAʙBᴄCᴅDᴇEꜰFɢGʜHɪIᴊJᴋKʟLᴍMɴNᴏOᴘPʀRꜱSᴛTᴜUᴠVᴡWʏYᴢZ';
for (let i = 0; i < SMALL_CAPITALS.length; i += 2) {
  READS_AS.set(SMALL_CAPITALS[i] as string, SMALL_CAPITALS[i + 1] as string);
}
const DOUBLED = '«<<»>>《<<》>>⟪<<⟫>>';
for (let i = 0; i < DOUBLED.length; i += 3)
  READS_AS.set(DOUBLED[i] as string, DOUBLED.slice(i + 1, i + 3));
for (const [char, reads] of [
  ['⫷', '<<<'],
  ['⫸', '>>>'],
  ['❬', '<'],
  ['❭', '>'],
  ['＜', '<'],
  ['＞', '>'],
  ['﹤', '<'],
  ['﹥', '>'],
]) {
  READS_AS.set(char as string, reads as string);
}

// Enclosed letters with no compatibility form (negative circled, negative squared, regional
// indicators): each reads as its letter.
for (const first of [0x1f150, 0x1f170, 0x1f1e6]) {
  for (let i = 0; i < 26; i++)
    READS_AS.set(String.fromCodePoint(first + i), String.fromCharCode(65 + i));
}

/**
 * What a character outside the lists reads as: its compatibility form where that holds a Latin
 * letter (🄐, parenthesised A, reads as A: a visible letter, never nothing), else itself.
 */
function compatibleLetter(char: string): string {
  const letters = char.normalize('NFKD').match(/[A-Za-z]/g);
  return letters ? letters.join('').toUpperCase() : char;
}

/** The text as a reader sees it: letters (l, I, 1, | alike), brackets, other letters as `*`. */
export function reading(text: string): string {
  let out = '';
  for (const char of text) {
    if (/\p{Default_Ignorable_Code_Point}|\p{M}/u.test(char)) continue;
    const ascii = /^[\x20-\x7e]$/.test(char) ? char.toUpperCase() : undefined;
    const reads = READS_AS.get(char) ?? ascii ?? compatibleLetter(char);
    if (/^[<>]+$/.test(reads)) out += reads;
    else if (/^[A-Z01|]+$/.test(reads)) out += reads.replace(/[I1|]/g, 'L').replaceAll('0', 'O');
    else if (/[\p{L}\p{N}]/u.test(reads)) out += '*';
  }
  return out;
}

/** Marker words, `<<<` runs and `>>>` runs a reader would see. */
export function looksLikeMarkers(text: string): { words: number; opens: number; closes: number } {
  const seen = reading(text);
  return {
    words: seen.split(MARKER_WORD.replaceAll('I', 'L')).length - 1,
    opens: seen.match(/<{3,}/g)?.length ?? 0,
    closes: seen.match(/>{3,}/g)?.length ?? 0,
  };
}

/** Small capitals of the marker letters. */
export const SMALL_CAPITAL_LETTERS: Record<string, string> = {
  E: 'ᴇ',
  T: 'ᴛ',
  R: 'ʀ',
  N: 'ɴ',
  A: 'ᴀ',
  L: 'ʟ',
  U: 'ᴜ',
  S: 'ꜱ',
  D: 'ᴅ',
  C: 'ᴄ',
  O: 'ᴏ',
};
