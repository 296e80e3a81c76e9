/**
 * Injection detection: known prompt-injection phrasings, found on the
 * injection view of the skeleton (disguises undone) and reported by name.
 * The patterns are written in plain upper-case ASCII and widened once to the
 * look-alikes the view keeps apart (I l 1 |, 0 O); every gap is bounded, so each pattern does a
 * bounded amount of work per input position.
 */
import { lookAlike, type Skeleton, skeleton } from './skeleton.ts';

/** A pattern written in ASCII, its literal letters and escaped punctuation widened to their look-alikes. */
function onSkeleton(pattern: RegExp): RegExp {
  const source = pattern.source;
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const char = source[i] as string;
    if (char === '\\') {
      const next = source[++i] as string;
      const literal = !inClass && !/[A-Za-z0-9]/.test(next);
      out += literal ? lookAlike(next) : `\\${next}`;
    } else if (inClass) {
      inClass = char !== ']';
      out += char;
    } else {
      inClass = char === '[';
      out += /[A-Z]/.test(char) ? lookAlike(char) : char;
    }
  }
  return new RegExp(out, pattern.flags);
}

/** Known prompt-injection phrasings, by name. */
const INJECTION_PATTERNS: ReadonlyArray<readonly [string, RegExp]> = (
  [
    [
      'ignore-previous-instructions',
      /\b(?:IGNORE|DISREGARD|FORGET|OVERRIDE)\b.{0,40}\b(?:PREVIOUS|PRIOR|ABOVE|EARLIER|ALL|YOUR)\b.{0,30}\b(?:INSTRUCTIONS?|PROMPTS?|RULES|DIRECTIVES|GUIDELINES)\b/,
    ],
    [
      'role-reassignment',
      /\bYOU ARE NOW\b|\bFROM NOW ON,? YOU\b|\bACT AS (?:AN? )?(?:DIFFERENT|NEW|UNRESTRICTED)\b|\bPRETEND (?:TO BE|YOU ARE)\b/,
    ],
    [
      'fake-system-message',
      /<\/?\s*(?:SYSTEM|ASSISTANT|DEVELOPER)\s*>|\[\s*(?:SYSTEM|INST)\s*\]|^\s*(?:SYSTEM|DEVELOPER)\s*:/m,
    ],
    ['new-instructions', /\bNEW (?:INSTRUCTIONS|TASK|ORDERS)\s*:|\bUPDATED INSTRUCTIONS\b/],
    [
      'prompt-exfiltration',
      /\b(?:REVEAL|PRINT|SHOW|REPEAT|LEAK|OUTPUT)\b.{0,30}\b(?:SYSTEM PROMPT|YOUR INSTRUCTIONS|HIDDEN PROMPT|API KEYS?|SECRETS?|PASSWORDS?|TOKENS?)\b/,
    ],
    ['jailbreak', /\bJAILBREAK\b|\bDEVELOPER MODE\b|\bDAN MODE\b|\bDO ANYTHING NOW\b/],
    [
      'command-execution',
      /\b(?:CURL|WGET)\b[^\n|]{0,200}\|\s*(?:SUDO\s+)?(?:BA|Z)?SH\b|\bRM\s+-RF\s+\/|\bRUN (?:THIS|THE FOLLOWING) (?:COMMAND|SCRIPT)\b/,
    ],
    [
      'data-exfiltration',
      /\b(?:SEND|FORWARD|EMAIL|UPLOAD|POST)\b.{0,40}\b(?:ALL|EVERY|THE)\b.{0,30}\b(?:FILES|EMAILS|MESSAGES|CREDENTIALS|CONTACTS|DATA)\b.{0,40}\bTO\b/,
    ],
  ] as const
).map(([name, pattern]) => [name, onSkeleton(pattern)] as const);

/** Names of the known injection patterns found in the content (on its de-disguised skeleton). */
export function detectInjection(content: string, sk: Skeleton = skeleton(content)): string[] {
  return INJECTION_PATTERNS.filter(([, pattern]) => pattern.test(sk.injection)).map(
    ([name]) => name,
  );
}
