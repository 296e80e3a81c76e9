/**
 * A recipient string (a /hooks/agent `to`, or one a mapping rendered from
 * payload text) that breaks out of the product's own script: BlueBubbles'
 * `apple-script` send writes the chat GUID between double quotes in the
 * AppleScript it runs on the Mac (`chat id "<guid>"`), unescaped. An email
 * address or group id holding `"` or `\` passed the iMessage check
 * (`iMessage;-;a"&(…)&"@example.com`), so the script ran text the caller wrote.
 */
import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkIMessageRecipient } from '../engine/delivery/adapters/imessage.ts';
import { startTestServer, type TestServer } from './helpers/hookgate.ts';

// What would end the quoted string, escape in it or break the line it is on.
const BREAKS_OUT = /["\\\p{Cc}]/u;

const HOSTILE = [
  'a"&(x)&"@example.com',
  'iMessage;-;a"&x&"@example.com',
  'iMessage;+;chat1"&(x)&"',
  'SMS;+;chat\\"1',
  'ann\\@example.com',
  'iMessage;+;chat1\u0000',
  'a\u0007b@example.com',
];

describe('an iMessage recipient that breaks out of the AppleScript BlueBubbles runs', () => {
  it.each(HOSTILE)('%j is refused', (to) => {
    expect(checkIMessageRecipient(to)).not.toBeNull();
  });

  test.prop([
    fc.string({ unit: fc.constantFrom('a', '"', '\\', '\u0001', '@', '.', ';', '+', '-', 'i') }),
  ])('no recipient the check accepts holds a quote, a backslash or a control', (text) => {
    for (const to of [text, `iMessage;-;${text}`, `iMessage;+;${text}`]) {
      if (checkIMessageRecipient(to) === null) expect(to).not.toMatch(BREAKS_OUT);
    }
  });

  it.each([
    'ann@example.com',
    "o'brien@example.com",
    'iMessage;-;+15551234567',
    'iMessage;+;chat123456789012345678',
    'SMS;+;E0A2F8A4-1B2C-4D5E-8F90-123456789ABC',
  ])('%j is still accepted', (to) => {
    expect(checkIMessageRecipient(to)).toBeNull();
  });
});

describe('the door refuses it', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      channels: { imessage: { url: 'http://127.0.0.1:9', password: 'bb-secret' } },
    });
  });
  afterAll(() => server?.stop());

  it.each(HOSTILE.slice(0, 3))('to %j is 400 invalid_recipient', async (to) => {
    const res = await server.post('agent', { message: 'x', channel: 'imessage', to });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
      'invalid_recipient',
    );
  });
});
