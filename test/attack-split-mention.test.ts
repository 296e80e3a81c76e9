/**
 * Attack (a reply shaped for it): a long word running into `@channel`, so that the reply's split
 * falls between the word and the `@`. Mattermost's escaping leaves an `@` inside a word as it is
 * (an address); escaped whole and then cut hard there, the next part began `@channel wake up`,
 * which pages the whole channel. A hard cut never falls right before an `@`.
 */
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { MATTERMOST_MAX_LENGTH, mattermostText } from '../engine/delivery/adapters/mattermost.ts';
import { replyParts } from '../engine/delivery/split.ts';

// Mentions Mattermost acts on at the start of a post or after a non-word character.
const BARE_MENTION = /(?:^|[^\p{L}\p{N}])@(?:channel|all|here)/u;

it('a word running into @channel, cut exactly there: no part starts with a bare mention', () => {
  const budget = MATTERMOST_MAX_LENGTH - 4;
  const parts = replyParts(
    `${'a'.repeat(budget)}@channel wake up`,
    MATTERMOST_MAX_LENGTH,
    undefined,
    mattermostText,
  );
  expect(parts.length).toBeGreaterThan(1);
  for (const part of parts) expect(part).not.toMatch(BARE_MENTION);
});

it('a long word ending in an @-mention, cut near the @: no part holds a bare mention', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 20, max: 400 }),
      fc.integer({ min: -3, max: 3 }),
      fc.constantFrom('channel', 'all', 'here'),
      (max, near, name) => {
        // A part's room is max less the 4 kept to close a fence: the word ends around there.
        const word = 'w'.repeat(Math.max(1, max - 4 + near));
        const parts = replyParts(`${word}@${name} now`, max, undefined, mattermostText);
        for (const part of parts) expect(part).not.toMatch(BARE_MENTION);
      },
    ),
  );
});
