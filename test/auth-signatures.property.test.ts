/**
 * Properties every signature verifier holds, over generated bodies, secrets
 * and times, with each provider's own signer: any single-bit change to the
 * body or to a signed header is refused; any secret of a rotation list
 * verifies and is the one reported; timestamps inside the window pass and
 * outside it fail; arbitrary header values are refused, never thrown on.
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import { headerValues, SENDERS } from './helpers/signature-senders.ts';
import { NOW, run } from './verifier-contract.ts';

const body = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 });
const secretBytes = fc.uint8Array({ minLength: 16, maxLength: 40 });
const BIT = fc.integer({ min: 0, max: 7 });

function flipBit(text: string, at: number, bit: number): string {
  const i = at % text.length;
  return (
    text.slice(0, i) + String.fromCharCode(text.charCodeAt(i) ^ (1 << bit)) + text.slice(i + 1)
  );
}

describe.each(SENDERS)('signature properties: $name', (sender) => {
  const secret = sender.secret(new Uint8Array(24).fill(42));
  const verifier = createVerifier(sender.auth([secret]), 'auth');

  test.prop([body, fc.nat(), BIT])(
    'any single-bit change in the body is refused',
    async (text, at, bit) => {
      const headers = await sender.sign(secret, text, NOW);
      const raw = Buffer.from(text);
      raw[at % raw.length] = (raw[at % raw.length] as number) ^ (1 << bit);
      expect(run(verifier, headers, raw)).toBe('mismatch');
    },
  );

  test.prop([body, fc.nat(), fc.nat(), BIT])(
    'any single-bit change in a signed header (signature, timestamp, id) is refused',
    async (text, which, at, bit) => {
      const headers = await sender.sign(secret, text, NOW);
      const names = Object.keys(headers);
      const name = names[which % names.length] as string;
      const changed = { ...headers, [name]: flipBit(headers[name] as string, at, bit) };
      expect(typeof run(verifier, changed, text)).toBe('string');
    },
  );

  test.prop([
    fc.uniqueArray(secretBytes, {
      minLength: 1,
      maxLength: 8,
      selector: (b) => Buffer.from(b).toString('hex'),
    }),
    fc.nat(),
    body,
  ])('any secret of a rotation list verifies and reports its index', async (list, pick, text) => {
    const secrets = list.map(sender.secret);
    const index = pick % secrets.length;
    const rotated = createVerifier(sender.auth(secrets), 'auth');
    const headers = await sender.sign(secrets[index] as string, text, NOW);
    expect(run(rotated, headers, text)).toMatchObject({
      scheme: rotated.scheme,
      secretIndex: index,
    });
  });

  test.prop([
    fc.dictionary(fc.constantFrom(...sender.signedHeaders), fc.string({ unit: 'binary' })),
    body,
  ])('arbitrary values in the signed headers are refused, never thrown on', (headers, text) => {
    const values = headerValues(headers);
    expect(() => verifier.precheck(values, NOW)).not.toThrow();
    expect(typeof verifier.verify(values, Buffer.from(text), NOW)).toBe('string');
  });

  if (sender.timestamped) {
    test.prop([
      fc.integer({ min: 1, max: 3600 }),
      fc.double({ min: -2, max: 2, noNaN: true }),
      body,
    ])(
      'timestamps within the tolerance pass, outside it fail',
      async (tolerance, fraction, text) => {
        const offset = Math.round(tolerance * fraction);
        const windowed = createVerifier(sender.auth([secret], tolerance), 'auth');
        const headers = await sender.sign(secret, text, NOW + offset);
        const result = run(windowed, headers, text);
        const expected = Math.abs(offset) <= tolerance ? { skewSeconds: 0 - offset } : 'stale';
        if (typeof expected === 'string') expect(result).toBe(expected);
        else expect(result).toMatchObject(expected);
      },
    );
  }
});
