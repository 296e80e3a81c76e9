/**
 * The iMessage channel's recipient check, which a caller's `to` reaches when
 * the policy lets callers choose recipients: the same verdicts as the email
 * pattern it replaced, without that pattern's retry from every dot of a
 * long run of them.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { checkIMessageRecipient } from '../engine/delivery/adapters/imessage.ts';

// The pattern before: quadratic in a run of dots after the `@`.
const EMAIL_BEFORE = /^[^\s@;]+@[^\s@;]+\.[^\s@;]+$/;

describe('iMessage recipients', () => {
  const address = fc
    .array(fc.constantFrom('a', 'b', '.', '@', ';', ' ', '-', '+', '1'), { maxLength: 10 })
    .map((parts) => parts.join(''));

  test.prop([address])(
    'an address passes exactly when the email pattern before passed it',
    (text) => {
      // Only texts that are not phone numbers: those pass by their own rule.
      fc.pre(!text.startsWith('+'));
      expect(checkIMessageRecipient(text) === null).toBe(EMAIL_BEFORE.test(text.trim()));
    },
  );

  it.each([
    ['an email address', 'ann@example.com', true],
    ['a chat GUID with an email address', 'iMessage;-;ann@example.com', true],
    ['a domain without a dot', 'ann@localhost', false],
    ['a domain that is only a dot', 'ann@.', false],
  ])('%s', (_name, to, valid) => {
    expect(checkIMessageRecipient(to) === null).toBe(valid);
  });

  it('a `to` of `a@`, 60,000 dots and a `;`: refused, in one pass', () => {
    expect(checkIMessageRecipient(`a@${'.'.repeat(60_000)};`)).not.toBeNull();
    expect(checkIMessageRecipient(`iMessage;-;a@${'.'.repeat(60_000)};`)).not.toBeNull();
  });
});
