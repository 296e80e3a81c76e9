/**
 * The generic `hmac` scheme for the long tail of senders (Shopify, Meta,
 * and anyone who signs "an HMAC of the body in a header"): one header
 * holding `<prefix><digest>`, the digest in hex (lower case) or canonical
 * base64, over a configured template of the raw body and other headers. An
 * optional timestamp header is checked against the window; the boot step
 * makes sure such a header is part of the signed content.
 */
import { createMacVerifier } from './mac-verifier.ts';
import { DIGEST_BYTES, type DigestAlgorithm } from './digest-compare.ts';
import { isRefusal, REFUSED, type Refusal, singleHeader } from './header-access.ts';
import { type ContentTemplate, checkContentHeaders, contentParts } from './signed-content.ts';
import { decodeBase64, decodeHex } from './strict-decode.ts';
import { checkWindow, type InWindow } from './timestamp.ts';
import type { HeaderValues, Verifier } from './verifier.ts';

/** A generic hmac route's settings, defaults applied and template compiled. */
export type HmacSettings = {
  /** Signature header, lower case. */
  header: string;
  algorithm: DigestAlgorithm;
  encoding: 'hex' | 'base64';
  /** Text before the digest in the header (`sha256=` for Meta); empty for none. */
  prefix: string;
  content: ContentTemplate;
  /** Header holding the signed unix seconds, lower case; none when the sender signs no time. */
  timestampHeader?: string;
  toleranceSeconds: number;
};

type Parsed = { signature: Buffer; window?: InWindow };

function decodeDigest(settings: HmacSettings, text: string): Buffer | undefined {
  const bytes = DIGEST_BYTES[settings.algorithm];
  return settings.encoding === 'hex' ? decodeHex(text, bytes) : decodeBase64(text, bytes);
}

function parseTimestamp(
  settings: HmacSettings,
  headers: HeaderValues,
  nowSeconds: number,
): InWindow | Refusal | undefined {
  if (settings.timestampHeader === undefined) return undefined;
  const stamp = singleHeader(headers, settings.timestampHeader);
  if (isRefusal(stamp)) return stamp;
  return checkWindow(stamp.value, nowSeconds, settings.toleranceSeconds);
}

function parseHeaders(
  settings: HmacSettings,
  headers: HeaderValues,
  nowSeconds: number,
): Parsed | Refusal {
  const header = singleHeader(headers, settings.header);
  if (isRefusal(header)) return header;
  const { value } = header;
  if (!value.startsWith(settings.prefix)) return REFUSED.malformed;
  const signature = decodeDigest(settings, value.slice(settings.prefix.length));
  if (signature === undefined) return REFUSED.malformed;
  const window = parseTimestamp(settings, headers, nowSeconds);
  if (window !== undefined && isRefusal(window)) return window;
  const missing = checkContentHeaders(settings.content, headers);
  if (missing !== undefined) return missing;
  return { signature, window };
}

/** A verifier for a generic hmac route; secrets are used as their UTF-8 bytes. */
export function createHmacVerifier(secrets: readonly string[], settings: HmacSettings): Verifier {
  return createMacVerifier(secrets, {
    scheme: 'hmac',
    algorithm: settings.algorithm,
    parse(headers, nowSeconds) {
      const parsed = parseHeaders(settings, headers, nowSeconds);
      if (isRefusal(parsed)) return parsed;
      return {
        signatures: [parsed.signature],
        ...(parsed.window !== undefined && { window: parsed.window }),
      };
    },
    content: (_parsed, headers, raw) => contentParts(settings.content, headers, raw),
  });
}
