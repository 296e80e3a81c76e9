/**
 * The PostgreSQL limiter's view of which addresses may have a count
 * (engine/store/postgres/counting-view.ts): whatever this instance counts, forgets and reads,
 * and however many addresses fail, an address with a count in the store is never answered
 * "none" (its success would leave the count standing); with no more counting addresses than
 * the view keeps, an address never counted is answered "none" (a success writes nothing).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { createCountingView } from '../engine/store/postgres/counting-view.ts';

const ADDRESSES = ['a', 'b', 'c', 'd', 'e', 'f'];

type Step = { op: 'counted' | 'forget'; client: string } | { op: 'readBegins' | 'readEnds' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constantFrom('counted' as const, 'forget' as const),
    client: fc.constantFrom(...ADDRESSES),
  }),
  fc.record({ op: fc.constantFrom('readBegins' as const, 'readEnds' as const) }),
);

describe('failed-auth counting view', () => {
  test.prop([fc.integer({ min: 1, max: 4 }), fc.array(step, { maxLength: 60 })])(
    'never answers "none" for an address the store holds a count of',
    (maxClients, steps) => {
      const view = createCountingView(maxClients);
      // The store: the addresses counted and not reset or locked since.
      const store = new Set<string>();
      // One read at a time, as the limiter reads: its mark and the store's rows at its snapshot.
      let inFlight: { mark: number; rows: string[] } | undefined;
      for (const s of steps) {
        if (s.op === 'counted') {
          store.add(s.client);
          view.counted(s.client);
        } else if (s.op === 'forget') {
          store.delete(s.client);
          view.forget(s.client);
        } else if (s.op === 'readBegins') {
          inFlight ??= { mark: view.mark(), rows: [...store] };
        } else if (inFlight) {
          // The query's LIMIT: at most maxClients + 1 rows, whichever.
          view.read(inFlight.mark, inFlight.rows.slice(0, maxClients + 1));
          inFlight = undefined;
        }
        for (const client of store) expect(view.mayHave(client)).toBe(true);
      }
    },
  );

  it('answers "none" for an address never counted while the view holds every count', () => {
    const view = createCountingView(2);
    view.counted('a');
    const mark = view.mark();
    view.read(mark, ['a', 'b']);
    expect(view.mayHave('b')).toBe(true);
    expect(view.mayHave('c')).toBe(false);
    view.forget('a');
    expect(view.mayHave('a')).toBe(false);
  });

  it('answers "may have" for every address once the counts outnumber the view, until a read holds them all', () => {
    const view = createCountingView(2);
    for (const client of ['a', 'b', 'c']) view.counted(client);
    // 'a' dropped from what this instance keeps: nothing can be ruled out.
    expect(view.mayHave('z')).toBe(true);
    // A read begun after the drop that finds more than the view keeps.
    view.read(view.mark(), ['a', 'b', 'c']);
    expect(view.mayHave('z')).toBe(true);
    // Two were reset elsewhere: a read finds all that are left.
    view.read(view.mark(), ['c']);
    expect(view.mayHave('z')).toBe(false);
    expect(view.mayHave('c')).toBe(true);
  });

  it('while crowded, an address reset since the last read writes no further reset until a count or a read (flood of successes)', () => {
    const view = createCountingView(1);
    for (const client of ['a', 'b']) view.counted(client);
    expect(view.mayHave('z')).toBe(true);
    view.forget('z');
    expect(view.mayHave('z')).toBe(false);
    expect(view.mayHave('y')).toBe(true);
    // A failure counted here, or a read that may have seen one counted elsewhere, ends it.
    view.counted('z');
    expect(view.mayHave('z')).toBe(true);
    view.forget('y');
    view.read(view.mark(), ['a', 'b']);
    expect(view.mayHave('y')).toBe(true);
  });

  it('stays crowded after a read during which it dropped a count (the read may have missed it)', () => {
    const view = createCountingView(1);
    const mark = view.mark();
    view.counted('a');
    view.counted('b');
    view.read(mark, []);
    expect(view.mayHave('a')).toBe(true);
  });
});
