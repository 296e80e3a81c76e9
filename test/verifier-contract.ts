/**
 * The contract every signature verifier passes, driven by its provider's own
 * signer: a signed delivery verifies with every secret of a rotation list
 * and reports which one; precheck and verify agree; a changed body, a wrong
 * secret, absent, repeated, empty, oversized or oddly encoded headers and
 * timestamps outside the window (either side) are refused, never thrown.
 */
import { describe, expect, it } from 'vitest';
import { createVerifier } from '../engine/auth/registry.ts';
import type { AuthFailure, Verified, Verifier } from '../engine/auth/verifier.ts';
import { headerValues, type Sender, type TestHeaders } from './helpers/signature-senders.ts';

/** A fixed arrival time for the examples (unix seconds). */
export const NOW = 1_780_000_000;

const BODY = '{"action":"opened","number":1,"note":"café ☕"}';
const SECRETS = [1, 2, 3].map((n) => new Uint8Array(24).fill(n * 17));

/** Precheck then verify, as the pipeline runs them; the first failure or the proof. */
export function run(
  verifier: Verifier,
  headers: TestHeaders,
  body: string | Buffer,
  now = NOW,
): Verified | AuthFailure {
  const values = headerValues(headers);
  const early = verifier.precheck(values, now);
  const late = verifier.verify(values, Buffer.from(body), now);
  // verify alone must reach the same refusal that precheck reports.
  if (early !== undefined) expect(late).toBe(early);
  return late;
}

/** Register the shared verifier suite for one sender. */
export function describeVerifierContract(sender: Sender): void {
  describe(`verifier contract: ${sender.name}`, () => {
    const secrets = SECRETS.map(sender.secret);
    const verifier = createVerifier(sender.auth(secrets), 'auth');
    const signed = (secret = secrets[0] as string, body = BODY, at = NOW) =>
      sender.sign(secret, body, at);

    it.each([0, 1, 2])('verifies a delivery signed with secret %i and reports it', async (i) => {
      const result = run(verifier, await signed(secrets[i]), BODY);
      expect(result).toMatchObject({ scheme: verifier.scheme, secretIndex: i });
    });

    it('refuses a wrong secret, a changed body and a body with a byte added', async () => {
      const other = sender.secret(new Uint8Array(24).fill(200));
      expect(run(verifier, await signed(other), BODY)).toBe('mismatch');
      expect(run(verifier, await signed(), BODY.replace('1', '2'))).toBe('mismatch');
      expect(run(verifier, await signed(), `${BODY}\n`)).toBe('mismatch');
    });

    it('refuses a request with no signature headers as missing', () => {
      expect(run(verifier, {}, BODY)).toBe('missing');
    });

    it.each(sender.signedHeaders)('header duplication: a repeated %s is refused', async (name) => {
      const headers = await signed();
      const key = Object.keys(headers).find((k) => k.toLowerCase() === name) as string;
      expect(
        run(
          verifier,
          { ...headers, [key]: [headers[key] as string, headers[key] as string] },
          BODY,
        ),
      ).toBe('duplicate');
    });

    it.each(sender.signedHeaders)('an empty %s is refused', async (name) => {
      const headers = await signed();
      const key = Object.keys(headers).find((k) => k.toLowerCase() === name) as string;
      expect(run(verifier, { ...headers, [key]: '' }, BODY)).toBe('malformed');
    });

    it.each(sender.signedHeaders)(
      'oversized header: a megabyte in %s is refused without throwing',
      async (name) => {
        const headers = await signed();
        const key = Object.keys(headers).find((k) => k.toLowerCase() === name) as string;
        const huge = `${headers[key]}${'a'.repeat(1 << 20)}`;
        expect(run(verifier, { ...headers, [key]: huge }, BODY)).toBe('malformed');
      },
    );

    it.each(['\u0000', '\u00ff', '☕', '\ud800', ' ', '%00', '\r\n'])(
      'odd encodings: %j appended to each signed header is refused',
      async (junk) => {
        const headers = await signed();
        for (const name of Object.keys(headers)) {
          const result = run(verifier, { ...headers, [name]: `${headers[name]}${junk}` }, BODY);
          expect(typeof result).toBe('string');
        }
      },
    );

    if (sender.timestamped) {
      it.each([
        ['at the edge in the past', -300, true],
        ['at the edge in the future', 300, true],
        ['stale by a second', -301, false],
        ['from the future by a second', 301, false],
        ['a day old', -86_400, false],
      ] as const)('a timestamp %s (%i s) passes: %s', async (_label, offset, passes) => {
        const result = run(verifier, await signed(secrets[0], BODY, NOW + offset), BODY);
        if (passes) expect(result).toMatchObject({ timestamp: NOW + offset, skewSeconds: -offset });
        else expect(result).toBe('stale');
      });
    }
  });
}
