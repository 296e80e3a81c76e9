/**
 * Confusable characters and their prototypes (UTS #39): the Unicode
 * confusables table as shipped by `unhomoglyph`, plus a short explicit list
 * of look-alikes that table lacks (small capitals, bracket shapes, enclosed
 * letters). A lookup is one own-property read per code point.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Unicode version of the confusables data in the `unhomoglyph` table. */
export const CONFUSABLES_UNICODE_VERSION = '13.0.0';

// Loaded on the first non-ASCII character (plain ASCII never needs it), as a null-prototype
// copy: lookups of hostile text never reach Object.prototype.
let table: Record<string, string> | undefined;

function confusablesTable(): Record<string, string> {
  table ??= Object.assign(
    Object.create(null),
    require('unhomoglyph/data.json') as Record<string, string>,
  ) as Record<string, string>;
  return table;
}

// Small capitals (the table maps lower-case look-alikes to them) and letters it has no row for.
const SMALL_CAPITALS = 'ᴀAʙBᴄCᴅDᴇEꜰFɢGʜHɪIᴊJᴋKʟLᴍMɴNᴏOᴘPꞯQʀRꜱSᴛTᴜUᴠVᴡWʏYᴢZ';

// Shapes read as `<`/`>` (or doubled/tripled) whose table prototype is not a bracket.
const BRACKETS: Record<string, string> = {
  '\u00ab': '<<', // «
  '\u00bb': '>>', // »
  '\u300a': '<<', // 《
  '\u300b': '>>', // 》
  '\u27ea': '<<', // ⟪
  '\u27eb': '>>', // ⟫
  '\u2af7': '<<<', // ⫷
  '\u2af8': '>>>', // ⫸
  '\u2aa1': '<<', // ⪡
  '\u2aa2': '>>', // ⪢
  '\u276c': '<', // ❬ (the prototype of 〈 ⟨ 〈)
  '\u276d': '>', // ❭
  '\u2770': '<', // ❰
  '\u2771': '>', // ❱
  '\u2991': '<', // ⦑
  '\u2992': '>', // ⦒
  '\u2993': '<', // ⦓
  '\u2994': '>', // ⦔
  '\u29fc': '<', // ⧼
  '\u29fd': '>', // ⧽
  '\u227a': '<', // ≺
  '\u227b': '>', // ≻
  '\u22b2': '<', // ⊲
  '\u22b3': '>', // ⊳
  '\u02f1': '<', // ˱
  '\u02f2': '>', // ˲
};

const EXTRA: Record<string, string> = Object.assign(Object.create(null), BRACKETS);
for (let i = 0; i < SMALL_CAPITALS.length; i += 2) {
  EXTRA[SMALL_CAPITALS[i] as string] = SMALL_CAPITALS[i + 1] as string;
}

// Enclosed and symbol letter blocks without a decomposition, each A..Z in order.
const LETTER_BLOCKS: ReadonlyArray<number> = [0x1f150, 0x1f170, 0x1f1e6];

/** The prototype a character imitates, or undefined when it is its own prototype. */
export function prototypeOf(char: string): string | undefined {
  const mapped = confusablesTable()[char] ?? EXTRA[char];
  if (mapped !== undefined) return mapped;
  const cp = char.codePointAt(0) as number;
  for (const first of LETTER_BLOCKS) {
    if (cp >= first && cp < first + 26) return String.fromCharCode(65 + cp - first);
  }
  return undefined;
}

let mapped: Set<number> | undefined;

/** Whether a code point has a prototype (a cheap numeric check before any string work). */
export function hasPrototype(cp: number): boolean {
  mapped ??= new Set(
    [...Object.keys(confusablesTable()), ...Object.keys(EXTRA)].map(
      (c) => c.codePointAt(0) as number,
    ),
  );
  return mapped.has(cp) || LETTER_BLOCKS.some((first) => cp >= first && cp < first + 26);
}
