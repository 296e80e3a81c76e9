/**
 * A long reply inside a code fence, cut into parts: every part, the cut 20th with its note
 * included, closes the fences it opens and stays within the product's length. The 20th part
 * lost its closing fence to the cut, and the note showed inside an open code block.
 */
import { fc, test } from '@fast-check/vitest';
import { expect, it } from 'vitest';
import { MAX_PARTS, replyParts } from '../engine/delivery/split.ts';

const fences = (text: string) => text.split('```').length - 1;

it('the cut last part of a fenced reply closes its fence before the note', () => {
  const reply = `\`\`\`\n${Array.from({ length: 3000 }, (_, i) => `line ${i} ${'x'.repeat(12)}`).join('\n')}\n\`\`\``;
  const parts = replyParts(reply, 2000);
  expect(parts).toHaveLength(MAX_PARTS);
  const last = parts.at(-1) as string;
  expect(last).toMatch(
    /```\n\n\[reply cut: about \d+ more characters not sent; the whole reply is in hookgate runs\]$/,
  );
  for (const part of parts) {
    expect(fences(part) % 2).toBe(0);
    expect(part.length).toBeLessThanOrEqual(2000);
  }
});

test.prop([fc.integer({ min: 200, max: 4000 }), fc.integer({ min: 1, max: 60 })])(
  'every part within the length, fences balanced, whatever the length and the reply',
  (max, lines) => {
    const reply = `\`\`\`\n${Array.from({ length: lines * 40 }, (_, i) => `${i} ${'y'.repeat(i % 50)}`).join('\n')}\n\`\`\``;
    for (const part of replyParts(reply, max)) {
      expect(part.length).toBeLessThanOrEqual(max);
      expect(fences(part) % 2).toBe(0);
    }
  },
);
