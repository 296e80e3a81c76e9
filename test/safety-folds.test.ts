/**
 * The safety wrapper's per-code-point folds are kept within Unicode's bounds:
 * text beyond the BMP cannot make the costly folds be computed over and over
 * (no eviction to cycle through) nor grow the cache past the code points that
 * need a full fold; warming folds the BMP without changing any result.
 */
import { describe, expect, it } from 'vitest';
import { astralFoldsKept, bmpFoldsKept, skeleton, warmFolds } from '../engine/safety/skeleton.ts';

/** Every code point of a range as text (surrogates left out). */
function range(from: number, to: number): string {
  let text = '';
  for (let cp = from; cp < to; cp++)
    if (cp < 0xd800 || cp > 0xdfff) text += String.fromCodePoint(cp);
  return text;
}

describe('fold cache bounds', () => {
  it('cycling through every astral plane keeps at most the code points that need a full fold (cache-thrash attack)', () => {
    const planes = [range(0x10000, 0x20000), range(0x20000, 0x30000), range(0xe0000, 0xf0000)];
    for (let round = 0; round < 2; round++) for (const text of planes) skeleton(text);
    const kept = astralFoldsKept();
    expect(kept).toBeGreaterThan(0);
    // Far below the number of astral code points sent (196,608): only the costly ones are kept.
    expect(kept).toBeLessThan(20_000);
    skeleton(range(0x30000, 0x40000));
    expect(astralFoldsKept()).toBe(kept);
  });

  it('warming folds every BMP code point while idle, with the same results as on demand', async () => {
    const expected = [0x2010, 0x2212, 0x13a0, 0xa4d0, 0x1d07, 0xff1c, 0xfdfa, 0x300a].map((cp) =>
      skeleton(`A${String.fromCodePoint(cp)}B`, true),
    );
    // Lone surrogates, which text may hold, are folded and kept on demand, never by warming: an
    // earlier file in this worker may have kept some, so all of them are kept first, and the
    // count to reach does not depend on what ran before.
    let lone = '';
    for (let unit = 0xd800; unit <= 0xdfff; unit++) lone += `x${String.fromCharCode(unit)}`;
    skeleton(lone);
    warmFolds(8192);
    // Every BMP code point but ASCII.
    const all = 0x10000 - 0x80;
    await new Promise<void>((resolve) => {
      const probe = () => (bmpFoldsKept() >= all ? resolve() : setTimeout(probe, 5));
      probe();
    });
    expect(bmpFoldsKept()).toBe(all);
    const warmed = [0x2010, 0x2212, 0x13a0, 0xa4d0, 0x1d07, 0xff1c, 0xfdfa, 0x300a].map((cp) =>
      skeleton(`A${String.fromCodePoint(cp)}B`, true),
    );
    expect(warmed).toEqual(expected);
  });
});
