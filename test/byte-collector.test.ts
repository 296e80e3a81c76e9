/**
 * The byte collector behind outbound answers and runner output: what is
 * kept is exactly the bytes added, in order, up to the cap; past it nothing
 * more is kept and the count of bytes offered goes on.
 */
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { collectBytes } from '../engine/byte-collector.ts';

const chunks = fc.array(fc.uint8Array({ maxLength: 300 }), { maxLength: 60 });

test.prop([chunks, fc.integer({ min: 0, max: 5000 })])(
  'keeps the bytes added, in order, while under the cap',
  (parts, cap) => {
    const collector = collectBytes(cap);
    let total = 0;
    let accepted = true;
    const kept: number[] = [];
    for (const part of parts) {
      total += part.length;
      const took = collector.add(Buffer.from(part));
      expect(took).toBe(accepted && total <= cap);
      if (took) kept.push(...part);
      else accepted = false;
      expect(collector.received()).toBe(total);
    }
    expect([...collector.bytes()]).toEqual(kept);
    expect(collector.bytes().length).toBeLessThanOrEqual(cap);
  },
);
