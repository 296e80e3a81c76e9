/**
 * Injection detection: known prompt-injection phrasings, found on the
 * injection view of the skeleton (disguises undone) and reported by name.
 * The patterns are written in plain upper-case ASCII and widened once to the
 * look-alikes the view keeps apart (I l 1 |, 0 O). Phrases with long gaps
 * between their words are found by one linear scan (wordsInOrder), the rest
 * by short regexes, so detection is linear in the input.
 */
import { lookAlike, type Skeleton, skeleton } from './skeleton.ts';

/**
 * Every pattern this module built, as run over untrusted text: built at load, so the test that
 * holds the engine's patterns to linear time (regex-linear.test.ts) cannot read them as literals.
 */
export const BUILT_PATTERNS: RegExp[] = [];

/** Note a pattern built at load among BUILT_PATTERNS. */
function built(pattern: RegExp): RegExp {
  BUILT_PATTERNS.push(pattern);
  return pattern;
}

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
  return built(new RegExp(out, pattern.flags));
}

/** A test of the injection view for one phrasing. */
type Detector = (view: string) => boolean;

/** A pattern with no long gaps: one regex search. */
function phrase(pattern: RegExp): Detector {
  const widened = onSkeleton(pattern);
  return (view) => widened.test(view);
}

/**
 * Words in order, each starting at most `gaps[i]` characters after the previous one ends, on one
 * line (and, with `barrier`, without that character between). One scan over the view keeps the
 * latest end of each partial phrase, so the work is linear whatever the gaps: a regex with a gap
 * of n retries up to n characters from every occurrence of the first word.
 */
function wordsInOrder(stages: RegExp[], gaps: number[], barrier = ''): Detector {
  const groups = stages.map((stage) => `(${onSkeleton(stage).source})`).join('|');
  const scan = built(new RegExp(`${groups}|(\n${barrier})`, 'g'));
  const last = stages.length - 1;
  // Cheap first look: most texts lack the first or the last word altogether.
  const first = onSkeleton(stages[0] as RegExp);
  const final = onSkeleton(stages[last] as RegExp);
  return (view) => {
    if (!first.test(view) || !final.test(view)) return false;
    const ends: number[] = stages.map(() => Number.NEGATIVE_INFINITY);
    for (const match of view.matchAll(scan)) {
      const stage = match.findIndex((group, i) => i > 0 && group !== undefined) - 1;
      if (stage > last) {
        ends.fill(Number.NEGATIVE_INFINITY);
        continue;
      }
      const end = match.index + match[0].length;
      if (stage === 0) ends[0] = end;
      else if (match.index - (ends[stage - 1] as number) <= (gaps[stage - 1] as number)) {
        if (stage === last) return true;
        ends[stage] = end;
      }
    }
    return false;
  };
}

/** Either detector. */
function either(...detectors: Detector[]): Detector {
  return (view) => detectors.some((detect) => detect(view));
}

/** Known prompt-injection phrasings, by name. */
const INJECTION_PATTERNS: ReadonlyArray<readonly [string, Detector]> = [
  [
    'ignore-previous-instructions',
    wordsInOrder(
      [
        /\b(?:IGNORE|DISREGARD|FORGET|OVERRIDE)\b/,
        /\b(?:PREVIOUS|PRIOR|ABOVE|EARLIER|ALL|YOUR)\b/,
        /\b(?:INSTRUCTIONS?|PROMPTS?|RULES|DIRECTIVES|GUIDELINES)\b/,
      ],
      [40, 30],
    ),
  ],
  [
    'role-reassignment',
    phrase(
      /\bYOU ARE NOW\b|\bFROM NOW ON,? YOU\b|\bACT AS (?:AN? )?(?:DIFFERENT|NEW|UNRESTRICTED)\b|\bPRETEND (?:TO BE|YOU ARE)\b/,
    ),
  ],
  [
    'fake-system-message',
    phrase(
      // A line that starts with the name, written without the `m` flag's `^\s*`: that retried
      // from every line start over a run of blank lines, quadratic in the run's length. The
      // skeleton's view writes every line break it knows (NEL, U+2028, U+2029) as a newline.
      /<\/?\s*(?:SYSTEM|ASSISTANT|DEVELOPER)\s*>|\[\s*(?:SYSTEM|INST)\s*\]|(?:^|[\n\r\u2028\u2029])[^\S\n\r\u2028\u2029]*(?:SYSTEM|DEVELOPER)\s*:/,
    ),
  ],
  ['new-instructions', phrase(/\bNEW (?:INSTRUCTIONS|TASK|ORDERS)\s*:|\bUPDATED INSTRUCTIONS\b/)],
  [
    'prompt-exfiltration',
    wordsInOrder(
      [
        /\b(?:REVEAL|PRINT|SHOW|REPEAT|LEAK|OUTPUT)\b/,
        /\b(?:SYSTEM PROMPT|YOUR INSTRUCTIONS|HIDDEN PROMPT|API KEYS?|SECRETS?|PASSWORDS?|TOKENS?)\b/,
      ],
      [30],
    ),
  ],
  ['jailbreak', phrase(/\bJAILBREAK\b|\bDEVELOPER MODE\b|\bDAN MODE\b|\bDO ANYTHING NOW\b/)],
  [
    'command-execution',
    either(
      // A download piped into a shell: no other pipe between the two.
      wordsInOrder([/\b(?:CURL|WGET)\b/, /\|\s*(?:SUDO\s+)?(?:BA|Z)?SH\b/], [200], '|\\|'),
      phrase(/\bRM\s+-RF\s+\/|\bRUN (?:THIS|THE FOLLOWING) (?:COMMAND|SCRIPT)\b/),
    ),
  ],
  [
    'data-exfiltration',
    wordsInOrder(
      [
        /\b(?:SEND|FORWARD|EMAIL|UPLOAD|POST)\b/,
        /\b(?:ALL|EVERY|THE)\b/,
        /\b(?:FILES|EMAILS|MESSAGES|CREDENTIALS|CONTACTS|DATA)\b/,
        /\bTO\b/,
      ],
      [40, 30, 40],
    ),
  ],
];

/** Names of the known injection patterns found in the content (on its de-disguised skeleton). */
export function detectInjection(content: string, sk: Skeleton = skeleton(content)): string[] {
  return INJECTION_PATTERNS.filter(([, detect]) => detect(sk.injection)).map(([name]) => name);
}
