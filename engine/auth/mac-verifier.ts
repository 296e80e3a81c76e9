/**
 * The shape every HMAC scheme shares (github, stripe, slack, the generic
 * hmac): parse the headers (once per request: the precheck's result is what
 * verify reads), build the signed content over the raw body, and match any
 * configured key against any presented signature. A scheme is its parse and
 * its content; the verifier is this one function.
 */
import { createSecretKey } from 'node:crypto';
import type { AuthScheme } from '../../schemas/auth.ts';
import { type ContentParts, type DigestAlgorithm, matchingKey } from './digest-compare.ts';
import { isRefusal, type Refusal } from './header-access.ts';
import type { AuthFailure, HeaderValues, Verified, Verifier } from './verifier.ts';

/** What a scheme's header parse found: the presented signatures, and the signed time if any. */
export type ParsedMac = {
  signatures: readonly Buffer[];
  window?: { timestamp: number; skewSeconds: number };
};

export type MacScheme<P extends ParsedMac> = {
  scheme: AuthScheme;
  algorithm: DigestAlgorithm;
  parse(headers: HeaderValues, nowSeconds: number): P | Refusal;
  content(parsed: P, headers: HeaderValues, raw: Buffer): ContentParts;
};

/** The verifier of an HMAC scheme over its secrets' UTF-8 bytes. */
export function createMacVerifier<P extends ParsedMac>(
  secrets: readonly string[],
  spec: MacScheme<P>,
): Verifier {
  const keys = secrets.map((secret) => createSecretKey(Buffer.from(secret, 'utf8')));
  // The stages pass the same header view and time to precheck and verify: parse once.
  const parsedOf = new WeakMap<HeaderValues, { nowSeconds: number; parsed: P | Refusal }>();
  const parse = (headers: HeaderValues, nowSeconds: number) => {
    const seen = parsedOf.get(headers);
    if (seen?.nowSeconds === nowSeconds) return seen.parsed;
    const parsed = spec.parse(headers, nowSeconds);
    parsedOf.set(headers, { nowSeconds, parsed });
    return parsed;
  };
  return {
    scheme: spec.scheme,
    precheck(headers, nowSeconds): AuthFailure | undefined {
      const parsed = parse(headers, nowSeconds);
      return isRefusal(parsed) ? parsed.failure : undefined;
    },
    verify(headers, raw, nowSeconds): Verified | AuthFailure {
      const parsed = parse(headers, nowSeconds);
      if (isRefusal(parsed)) return parsed.failure;
      const content = spec.content(parsed, headers, raw);
      const secretIndex = matchingKey(spec.algorithm, keys, content, parsed.signatures);
      if (secretIndex < 0) return 'mismatch';
      return { scheme: spec.scheme, secretIndex, ...parsed.window };
    },
  };
}
