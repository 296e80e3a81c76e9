/**
 * The lanes transform calls wait in (in the server and in a transform process) and who gives way
 * at the waiting bound: each lane is first-in-first-out, the lanes take turns, and a call is
 * refused only where its own mapping already holds the most.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makeRoom } from '../engine/sandbox/fair-share.ts';
import { createCallQueue } from '../engine/sandbox/call-queue.ts';
import { createLanes } from '../engine/sandbox/lanes.ts';
import { fits, type Room } from '../engine/sandbox/waiting-bound.ts';

type Item = { key: string; n: number };
const KEYS = ['a', 'b', 'c', 'd'];
const keyArb = fc.constantFrom(...KEYS);

describe('lanes', () => {
  it('take one lane after another: a burst of one key holds up another key by one item at most', () => {
    const lanes = createLanes<Item>();
    for (let n = 0; n < 10; n++) lanes.push({ key: 'flood', n });
    lanes.push({ key: 'other', n: 0 });
    expect(lanes.take()).toEqual({ key: 'flood', n: 0 });
    expect(lanes.take()).toEqual({ key: 'other', n: 0 });
    expect(lanes.take()).toEqual({ key: 'flood', n: 1 });
  });

  it('serves a lane that appears after one lane was served alone next', () => {
    const lanes = createLanes<Item>();
    lanes.push({ key: 'flood', n: 0 });
    lanes.push({ key: 'flood', n: 1 });
    expect(lanes.take()).toEqual({ key: 'flood', n: 0 });
    lanes.push({ key: 'other', n: 0 });
    expect(lanes.take()).toEqual({ key: 'other', n: 0 });
  });

  it('passes over a lane whose front does not fit, and serves it later in its order', () => {
    const lanes = createLanes<Item>();
    lanes.push({ key: 'a', n: 0 });
    lanes.push({ key: 'b', n: 0 });
    expect(lanes.take((item) => item.key !== 'a')).toEqual({ key: 'b', n: 0 });
    expect(lanes.take()).toEqual({ key: 'a', n: 0 });
    expect(lanes.take()).toBeUndefined();
  });

  it('property: every item is taken once, each key’s in the order pushed, and between two items of a key every other key with items waiting is served', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(keyArb, fc.constant('take')), { maxLength: 200 }), (steps) => {
        const lanes = createLanes<Item>();
        const pushed = new Map<string, number>();
        const taken: Item[] = [];
        const waiting = () =>
          new Set([...lanes.lanes()].filter(([, l]) => l.length > 0).map(([k]) => k));
        // Keys with items waiting when each key was last served, and served since.
        const owed = new Map<string, Set<string>>();
        const step = (item: Item | undefined) => {
          if (!item) return;
          // Every key owed a turn since this key's last take has had it.
          expect([...(owed.get(item.key) ?? [])]).toEqual([]);
          for (const [key, keys] of owed) if (key !== item.key) keys.delete(item.key);
          const others = waiting();
          others.delete(item.key);
          owed.set(item.key, others);
          taken.push(item);
        };
        for (const s of steps) {
          if (s === 'take') step(lanes.take());
          else {
            const n = pushed.get(s) ?? 0;
            pushed.set(s, n + 1);
            lanes.push({ key: s, n });
          }
        }
        for (let item = lanes.take(); item; item = lanes.take()) step(item);
        expect(lanes.size).toBe(0);
        for (const key of KEYS) {
          const ns = taken.filter((item) => item.key === key).map((item) => item.n);
          expect(ns).toEqual(Array.from({ length: pushed.get(key) ?? 0 }, (_, i) => i));
        }
      }),
    );
  });
});

describe('the call queue', () => {
  it('takes calls sent back from a killed process before every lane, oldest first, whatever order they come back in', () => {
    const queue = createCallQueue<{ key: string; id: number }>(60_000, () => undefined);
    queue.add({ key: 'b', id: 7 });
    // A process was sent 1, 6, 2, 3 (lanes in turn): they come back in that order.
    for (const id of [1, 6, 2, 3]) queue.add({ key: id === 6 ? 'b' : 'a', id }, true);
    const taken = Array.from({ length: 5 }, () => queue.takeFirst(() => true)?.id);
    queue.clear();
    expect(taken).toEqual([1, 2, 3, 6, 7]);
  });
});

/** makeRoom over lanes given as each waiting call's bytes. */
const decide = (lanes: ReadonlyMap<string, number[]>, key: string, bytes: number, room: Room) =>
  makeRoom(
    new Map([...lanes].map(([lane, sizes]) => [lane, sizes.map((size) => ({ bytes: size }))])),
    key,
    bytes,
    room,
  );

/** A room with these bounds, `inflightBytes` held by calls sent, and the lanes' waiting calls. */
function roomOf(
  lanes: Map<string, number[]>,
  bounds: { maxCalls: number; maxBytes: number; inflightBytes: number },
): Room {
  const all = [...lanes.values()].flat();
  return {
    waiting: all.length,
    maxCalls: bounds.maxCalls,
    heldBytes: bounds.inflightBytes + all.reduce((sum, b) => sum + b, 0),
    maxBytes: bounds.maxBytes,
  };
}

describe('makeRoom', () => {
  const laneArb = fc.dictionary(
    keyArb,
    fc.array(fc.integer({ min: 1, max: 1_000 }), { maxLength: 12 }),
  );
  const boundsArb = fc.record({
    maxCalls: fc.integer({ min: 1, max: 30 }),
    maxBytes: fc.integer({ min: 1, max: 20_000 }),
    inflightBytes: fc.integer({ min: 0, max: 5_000 }),
  });

  it('property: what it gives way makes the call fit; only lanes holding more than the caller’s would give way; nothing gives way for a call that fits', () => {
    fc.assert(
      fc.property(
        laneArb,
        boundsArb,
        keyArb,
        fc.integer({ min: 1, max: 2_000 }),
        (dict, bounds, key, bytes) => {
          const lanes = new Map(Object.entries(dict).map(([k, v]) => [k, [...v]]));
          const room = roomOf(lanes, bounds);
          const given = decide(lanes, key, bytes, room);
          if (fits(room, bytes)) {
            expect(given).toEqual([]);
            return;
          }
          if (given === undefined) return;
          const own = lanes.get(key) ?? [];
          for (const lane of given) {
            expect(lane).not.toBe(key);
            const sizes = lanes.get(lane) as number[];
            // Before it gave way it held more calls than the caller's lane would, or more bytes.
            const held = sizes.reduce((sum, b) => sum + b, 0);
            expect(
              sizes.length > own.length + 1 || held > own.reduce((sum, b) => sum + b, 0) + bytes,
            ).toBe(true);
            sizes.pop();
          }
          expect(fits(roomOf(lanes, bounds), bytes)).toBe(true);
        },
      ),
    );
  });

  it('property: when only the count is short, a call of a lane holding less than its share minus one is never refused', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.nat({ max: 3 }), { minLength: 8, maxLength: 40 }),
        (lanesCount, picks) => {
          // The bound is full of the lanes' calls, dealt at random.
          const keys = KEYS.slice(0, lanesCount);
          const lanes = new Map<string, number[]>(keys.map((k) => [k, []]));
          for (const pick of picks) lanes.get(keys[pick % lanesCount] as string)?.push(1);
          const maxCalls = picks.length;
          const bounds = { maxCalls, maxBytes: 1_000_000, inflightBytes: 0 };
          for (const key of keys) {
            const own = (lanes.get(key) as number[]).length;
            if (own <= Math.floor(maxCalls / lanesCount) - 2)
              expect(decide(lanes, key, 1, roomOf(lanes, bounds))).toHaveLength(1);
          }
        },
      ),
    );
  });

  it('refuses a call of the lane that holds the most, giving nothing way', () => {
    const lanes = new Map([
      ['flood', [1, 1, 1]],
      ['other', [1]],
    ]);
    const room = roomOf(lanes, { maxCalls: 4, maxBytes: 100, inflightBytes: 0 });
    expect(decide(lanes, 'flood', 1, room)).toBeUndefined();
    expect(decide(lanes, 'other', 1, room)).toEqual(['flood']);
    expect(decide(lanes, 'new', 1, room)).toEqual(['flood']);
  });

  it('gives way by bytes: a small call takes the place of the flood’s newest large calls', () => {
    const lanes = new Map([['flood', [400, 400, 400]]]);
    const room = roomOf(lanes, { maxCalls: 100, maxBytes: 1_300, inflightBytes: 0 });
    expect(decide(lanes, 'other', 500, room)).toEqual(['flood']);
    expect(decide(lanes, 'other', 600, room)).toEqual(['flood', 'flood']);
    // Past that the flood would hold less than the caller: the call is refused.
    expect(decide(lanes, 'other', 1_000, room)).toBeUndefined();
  });
});
