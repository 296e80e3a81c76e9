/**
 * Attack: a runner's reply as large as runtime.maxReplyBytes, made of the characters a
 * product's count escapes (`&` for Slack, control characters for Teams' JSON). The whole reply
 * was split before the parts past the 20th were dropped, each part measured by the product's
 * count at least twice: a megabyte of `&` held the event loop for most of a second, at every
 * attempt, for 20 parts sent. Only the head the sent parts hold is split now: the measuring
 * done is the same for a megabyte as for eight.
 */
import { expect, it } from 'vitest';
import { MAX_PARTS, replyParts } from '../engine/delivery/split.ts';

// Slack's count of `&` (its escape) and Teams' (JSON's escape of a control character).
const ESCAPES: Array<[string, string, (part: string) => number]> = [
  ['&', '&', (part) => part.replace(/&/g, '&amp;').length],
  ['\\x01', '\x01', (part) => JSON.stringify(part).length - 2],
];

it.each(ESCAPES)('a reply of %s: the same measuring for 1 MiB as for 8', (_name, unit, count) => {
  const measured: number[] = [];
  for (const size of [1_040_000, 8_320_000]) {
    let units = 0;
    const measure = (part: string) => {
      units += part.length;
      return count(part);
    };
    const parts = replyParts(unit.repeat(size), 4000, measure);
    expect(parts).toHaveLength(MAX_PARTS);
    for (const part of parts) expect(count(part)).toBeLessThanOrEqual(4000);
    expect(parts.at(-1)).toMatch(
      /\[reply cut: about \d+ more characters not sent; the whole reply is in hookgate runs\]$/,
    );
    measured.push(units);
  }
  expect(measured[1]).toBe(measured[0]);
  // A few passes over the 20 parts' text, not over the reply.
  expect(measured[0]).toBeLessThan(MAX_PARTS * 4000 * 8);
});

it.each([
  ['vertical tabs', '\v'],
  ['spaces and line breaks', ' \n'],
])('a reply that is mostly %s: the white space is skipped unmeasured', (_name, space) => {
  const teams = (part: string) => JSON.stringify(part).length - 2;
  const measured: number[] = [];
  for (const size of [1_040_000, 8_320_000]) {
    let units = 0;
    const measure = (part: string) => {
      units += part.length;
      return teams(part);
    };
    const parts = replyParts(`a${space.repeat(size / space.length)}b`, 4000, measure);
    expect(parts.map((part) => part.trim())).toEqual(['a', 'b']);
    measured.push(units);
  }
  // A few parts' worth for each head tried (it doubles until the reply is whole), never the
  // white space: some 13 million units were measured for the megabyte before.
  for (const units of measured) expect(units).toBeLessThan(200_000);
});

it('a reply that fits in 20 parts is sent whole, without a note', () => {
  const reply = Array.from({ length: 19 }, (_, i) => `${i} ${'z'.repeat(3000)}`).join('\n\n');
  const parts = replyParts(reply, 4000);
  expect(parts).toHaveLength(19);
  expect(parts.join('\n\n')).toBe(reply);
});

it("the product's escapes are applied to a head of the reply, the same for 1 MiB as for 8", () => {
  const prepared: number[] = [];
  for (const size of [1_040_000, 8_320_000]) {
    let units = 0;
    // Mattermost-like: a mention escaped (longer than it was).
    const prepare = (text: string) => {
      units += text.length;
      return text.replaceAll('@channel', '@\u200bchannel');
    };
    const parts = replyParts('@channel hello '.repeat(size / 15), 4000, undefined, prepare);
    expect(parts).toHaveLength(MAX_PARTS);
    expect(parts.join('')).not.toMatch(/@channel/);
    expect(parts.at(-1)).toMatch(/\[reply cut: about \d+ more characters not sent/);
    prepared.push(units);
  }
  expect(prepared[1]).toBe(prepared[0]);
});
