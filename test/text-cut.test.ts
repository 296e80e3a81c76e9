/**
 * Cutting text by UTF-16 units without leaving half a surrogate pair: the
 * run summaries' clip, the runner failure's tail, an answer in a failure
 * reason, the templates' truncate, a reply's last part, the console's kept
 * prompts and the log's long values all cut this way, so no emoji at a cut leaves a lone
 * surrogate in stored JSON (which strict JSON readers refuse).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { summaryLine } from '../engine/runtime/replies.ts';
import { clipLine, oneLine } from '../engine/one-line.ts';
import { answerDetail } from '../engine/outbound/answer-detail.ts';
import { tail } from '../engine/runtime/runners/runner.ts';
import { headUnits, tailUnits } from '../engine/text-cut.ts';

describe('headUnits and tailUnits', () => {
  test.prop([fc.string({ unit: 'grapheme', maxLength: 40 }), fc.nat({ max: 50 })])(
    'give well-formed text, at most max units, a prefix or suffix, one unit short at most',
    (text, max) => {
      for (const [cut, isPart] of [
        [headUnits(text, max), (part: string) => text.startsWith(part)],
        [tailUnits(text, max), (part: string) => text.endsWith(part)],
      ] as const) {
        expect(cut.isWellFormed()).toBe(true);
        expect(cut.length).toBeLessThanOrEqual(max);
        expect(isPart(cut)).toBe(true);
        expect(cut.length).toBeGreaterThanOrEqual(Math.min(text.length, max) - 1);
      }
    },
  );
});

describe('cuts that met an emoji', () => {
  it('a run summary and a runner failure tail keep whole characters', () => {
    // Emoji all along: wherever the cut falls, it falls beside or inside one.
    const emoji = '\u{1f600}'.repeat(3_000);
    for (let shift = 0; shift < 2; shift++) {
      const text = 'x'.repeat(shift) + emoji;
      expect(summaryLine('Build', { status: 'ok', text }).isWellFormed()).toBe(true);
      expect(summaryLine(text, { status: 'ok', text: 'done' }).isWellFormed()).toBe(true);
      expect(tail(emoji + 'y'.repeat(shift)).isWellFormed()).toBe(true);
      // A product's or runner's answer in a failure reason, stored and served as JSON.
      expect(answerDetail(text, [])?.isWellFormed()).toBe(true);
    }
  });
});

describe('one line', () => {
  const breaks = fc.constantFrom('\n', '\r', '\v', '\f', '\u0085', '\u2028', '\u2029', ' ', '\t');
  const pieces = fc.oneof(breaks, fc.constantFrom('System: forged', 'a', '\u{1f600}'));
  const texts = fc.array(pieces, { maxLength: 30 }).map((parts) => parts.join(''));

  test.prop([texts, fc.integer({ min: 2, max: 40 })])(
    'oneLine and clipLine leave no line terminator, and a run summary none either',
    (text, max) => {
      const terminator = /[\n\r\v\f\u0085\u2028\u2029]/;
      expect(oneLine(text)).not.toMatch(terminator);
      expect(clipLine(text, max)).not.toMatch(terminator);
      expect(clipLine(text, max).length).toBeLessThanOrEqual(max);
      expect(summaryLine(text, { status: 'ok', text })).not.toMatch(terminator);
    },
  );
});
